-- Messages: one row per bizID:messageKey (docs/state-machine.md, "States").
CREATE TABLE eventcenter_messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    biz_id          text        NOT NULL,
    message_key     text        NOT NULL,
    partition       integer     NOT NULL,
    status          smallint    NOT NULL,
    has_body        boolean     NOT NULL DEFAULT false,
    payload         bytea,
    -- Forwarded headers in order, binary-safe (store/internal/codec).
    headers         bytea,
    target          text        NOT NULL DEFAULT '',
    topic           text        NOT NULL DEFAULT '',
    forward_key     text        NOT NULL DEFAULT '',
    tag             text        NOT NULL DEFAULT '',
    verify          text        NOT NULL DEFAULT '',
    verify_attempts integer     NOT NULL DEFAULT 0,
    verify_next_at  timestamptz,
    send_status     smallint    NOT NULL DEFAULT 0,
    send_attempts   integer     NOT NULL DEFAULT 0,
    send_next_at    timestamptz,
    send_ref        text        NOT NULL DEFAULT '',
    lease_token     bigint      NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    conflicts       integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    decided_at      timestamptz,
    sent_at         timestamptz,
    CONSTRAINT eventcenter_messages_key UNIQUE (biz_id, message_key)
);

-- Check-back scan: PREPARED messages due in owned partitions.
CREATE INDEX eventcenter_messages_verify_due
    ON eventcenter_messages (partition, verify_next_at) WHERE status = 1;
-- Send scan: committed messages with a body, pending, due in owned partitions.
CREATE INDEX eventcenter_messages_send_due
    ON eventcenter_messages (partition, send_next_at) WHERE status = 2 AND send_status = 0 AND has_body;
-- Purge: terminal rows by age.
CREATE INDEX eventcenter_messages_purge_rolled_back
    ON eventcenter_messages (decided_at) WHERE status = 3;
CREATE INDEX eventcenter_messages_purge_sent
    ON eventcenter_messages (sent_at) WHERE status = 2 AND send_status = 1;
-- List by bizID, newest first (other lists walk the primary key backwards).
CREATE INDEX eventcenter_messages_biz_id ON eventcenter_messages (biz_id, id);

-- Operator actions.
CREATE TABLE eventcenter_audit (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    biz_id        text        NOT NULL,
    message_key   text        NOT NULL,
    action        text        NOT NULL,
    who           text        NOT NULL,
    reason        text        NOT NULL,
    at            timestamptz NOT NULL,
    status_before text        NOT NULL,
    status_after  text        NOT NULL
);
CREATE INDEX eventcenter_audit_message ON eventcenter_audit (biz_id, message_key, id);
