-- Messages: one row per bizID:messageKey (docs/state-machine.md, "States"), the
-- columns of the PostgreSQL and SQLite stores. Text is VARBINARY/BLOB:
-- compared byte for byte (as PostgreSQL compares text in this store), and no
-- character set can reject what a producer or a broker sent.
--
-- MySQL and MariaDB have no partial indexes. Each partial index of the
-- PostgreSQL schema is a STORED generated column that is NULL except on the
-- rows the partial index would hold, and an index on it: the scans ask for
-- "column <= x" or "column IS NOT NULL" and read only those entries.
CREATE TABLE eventcenter_messages (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    biz_id          VARBINARY(255)  NOT NULL,
    message_key     VARBINARY(1024) NOT NULL,
    `partition`     INT          NOT NULL,
    status          SMALLINT     NOT NULL,
    has_body        BOOLEAN      NOT NULL DEFAULT FALSE,
    payload         LONGBLOB,
    -- Forwarded headers in order, binary-safe (store/internal/codec).
    headers         MEDIUMBLOB,
    target          VARBINARY(1024) NOT NULL DEFAULT '',
    topic           VARBINARY(1024) NOT NULL DEFAULT '',
    forward_key     VARBINARY(4096) NOT NULL DEFAULT '',
    tag             VARBINARY(1024) NOT NULL DEFAULT '',
    verify          VARBINARY(4096) NOT NULL DEFAULT '',
    verify_attempts INT          NOT NULL DEFAULT 0,
    verify_next_at  DATETIME(6),
    send_status     SMALLINT     NOT NULL DEFAULT 0,
    send_attempts   INT          NOT NULL DEFAULT 0,
    send_next_at    DATETIME(6),
    send_ref        VARBINARY(1024) NOT NULL DEFAULT '',
    lease_token     BIGINT       NOT NULL DEFAULT 0,
    last_error      BLOB,
    conflicts       INT          NOT NULL DEFAULT 0,
    created_at      DATETIME(6)  NOT NULL,
    updated_at      DATETIME(6)  NOT NULL,
    decided_at      DATETIME(6),
    sent_at         DATETIME(6),
    -- Check-back scan: PREPARED messages due in owned partitions.
    verify_due_at   DATETIME(6) AS (IF(status = 1, verify_next_at, NULL)) STORED,
    -- Send scan: committed messages with a body, pending, due.
    send_due_at     DATETIME(6) AS (IF(status = 2 AND send_status = 0 AND has_body, send_next_at, NULL)) STORED,
    -- Purge: terminal rows by age (rolled back by decision, sent by send).
    purge_at        DATETIME(6) AS (CASE WHEN status = 3 THEN decided_at
                                         WHEN status = 2 AND send_status = 1 THEN sent_at END) STORED,
    -- The oldest PREPARED message per bizID (a gauge read every few seconds).
    prepared_biz    VARBINARY(255) AS (IF(status = 1, biz_id, NULL)) STORED,
    -- Orphan COMMITs: committed, but the PREPARE (the body) never arrived.
    orphan_biz      VARBINARY(255) AS (IF(status = 2 AND NOT has_body, biz_id, NULL)) STORED,
    UNIQUE KEY eventcenter_messages_key (biz_id, message_key),
    KEY eventcenter_messages_verify_due (`partition`, verify_due_at),
    KEY eventcenter_messages_send_due (`partition`, send_due_at),
    KEY eventcenter_messages_purge (purge_at),
    KEY eventcenter_messages_prepared (prepared_biz, created_at),
    KEY eventcenter_messages_orphan_commits (orphan_biz, created_at),
    -- List by bizID, newest first (other lists walk the primary key backwards).
    KEY eventcenter_messages_biz_id (biz_id, id)
) ENGINE = InnoDB;

-- Operator actions.
CREATE TABLE eventcenter_audit (
    id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    biz_id        VARBINARY(255)  NOT NULL,
    message_key   VARBINARY(1024) NOT NULL,
    action        VARBINARY(255)  NOT NULL,
    who           VARBINARY(1024) NOT NULL,
    reason        BLOB         NOT NULL,
    at            DATETIME(6)  NOT NULL,
    status_before VARBINARY(64) NOT NULL,
    status_after  VARBINARY(64) NOT NULL,
    KEY eventcenter_audit_message (biz_id, message_key, id)
) ENGINE = InnoDB;
