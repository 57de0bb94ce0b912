-- Per-key order: the order key a PREPARE carries and the
-- sequence assigned from the key's counter in the transaction that makes
-- the message sendable. Constant defaults: existing rows stay unordered.
ALTER TABLE eventcenter_messages ADD COLUMN order_key TEXT NOT NULL DEFAULT '';
ALTER TABLE eventcenter_messages ADD COLUMN order_seq INTEGER NOT NULL DEFAULT 0;
-- One counter per queue (bizID, order key, target, topic): the last
-- sequence assigned.
CREATE TABLE eventcenter_order_keys (
    biz_id    TEXT    NOT NULL,
    order_key TEXT    NOT NULL,
    target    TEXT    NOT NULL,
    topic     TEXT    NOT NULL,
    last_seq  INTEGER NOT NULL,
    PRIMARY KEY (biz_id, order_key, target, topic)
);
-- The messages that hold their key (sequenced, pending or DEAD).
CREATE INDEX eventcenter_messages_order_holders
    ON eventcenter_messages (biz_id, order_key, target, topic, order_seq)
    WHERE order_seq > 0 AND send_status IN (0, 2);
