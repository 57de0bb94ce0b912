-- The consumer inbox: one row per (consumer group, forwarded message id)
-- whose effects were committed. See package clientlib/inbox.
CREATE TABLE IF NOT EXISTS ec_inbox (
    consumer_group TEXT        NOT NULL,
    message_id     TEXT        NOT NULL,
    received_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer_group, message_id)
);
-- Purge deletes by age.
CREATE INDEX IF NOT EXISTS ec_inbox_received_at ON ec_inbox (received_at);
