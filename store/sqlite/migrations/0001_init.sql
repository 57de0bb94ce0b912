-- Messages: one row per bizID:messageKey. Times are unix microseconds (NULL
-- for "not set"). Columns mirror state.Message and the PostgreSQL table.
CREATE TABLE eventcenter_messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    biz_id          TEXT    NOT NULL,
    message_key     TEXT    NOT NULL,
    partition       INTEGER NOT NULL,
    status          INTEGER NOT NULL,
    has_body        INTEGER NOT NULL DEFAULT 0,
    payload         BLOB,
    headers         BLOB,
    target          TEXT    NOT NULL DEFAULT '',
    topic           TEXT    NOT NULL DEFAULT '',
    forward_key     TEXT    NOT NULL DEFAULT '',
    tag             TEXT    NOT NULL DEFAULT '',
    verify          TEXT    NOT NULL DEFAULT '',
    verify_attempts INTEGER NOT NULL DEFAULT 0,
    verify_next_at  INTEGER,
    send_status     INTEGER NOT NULL DEFAULT 0,
    send_attempts   INTEGER NOT NULL DEFAULT 0,
    send_next_at    INTEGER,
    send_ref        TEXT    NOT NULL DEFAULT '',
    lease_token     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    conflicts       INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    decided_at      INTEGER,
    sent_at         INTEGER,
    UNIQUE (biz_id, message_key)
);

-- Check-back scan: PREPARED messages due in owned partitions.
CREATE INDEX eventcenter_messages_verify_due
    ON eventcenter_messages (partition, verify_next_at) WHERE status = 1;
-- Send scan: committed messages with a body, pending, due in owned partitions.
CREATE INDEX eventcenter_messages_send_due
    ON eventcenter_messages (partition, send_next_at) WHERE status = 2 AND send_status = 0 AND has_body = 1;
-- Purge: terminal rows by age.
CREATE INDEX eventcenter_messages_purge_rolled_back
    ON eventcenter_messages (decided_at) WHERE status = 3;
CREATE INDEX eventcenter_messages_purge_sent
    ON eventcenter_messages (sent_at) WHERE status = 2 AND send_status = 1;
-- List by bizID, newest first.
CREATE INDEX eventcenter_messages_biz_id ON eventcenter_messages (biz_id, id);

-- Operator actions.
CREATE TABLE eventcenter_audit (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    biz_id        TEXT    NOT NULL,
    message_key   TEXT    NOT NULL,
    action        TEXT    NOT NULL,
    who           TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    at            INTEGER NOT NULL,
    status_before TEXT    NOT NULL,
    status_after  TEXT    NOT NULL
);
CREATE INDEX eventcenter_audit_message ON eventcenter_audit (biz_id, message_key, id);
