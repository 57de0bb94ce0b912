-- The consumer inbox: one row per (consumer group, forwarded message id)
-- whose effects were committed. See package clientlib/inbox.
-- VARBINARY: ids compare byte for byte (a case-insensitive collation would
-- take "A" and "a" for one message). 320 = bizID (64) + ':' + key (255).
CREATE TABLE IF NOT EXISTS ec_inbox (
    consumer_group VARBINARY(255) NOT NULL,
    message_id     VARBINARY(320) NOT NULL,
    received_at    DATETIME(6)    NOT NULL,
    PRIMARY KEY (consumer_group, message_id),
    INDEX ec_inbox_received_at (received_at)
) ENGINE = InnoDB;
