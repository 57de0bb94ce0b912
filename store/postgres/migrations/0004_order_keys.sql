-- eventcenter:no-transaction
-- Per-key order. A message's order key comes with its PREPARE
-- (ec-order-key); its sequence is assigned from the key's counter in the
-- transaction that makes it sendable. Both columns have a constant
-- default: PostgreSQL 11+ adds them without rewriting the table, under a
-- lock held for milliseconds (lock_timeout and retries as for every step).
-- Rows older releases write keep the defaults: unordered, as before.
ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS order_key text NOT NULL DEFAULT '';
ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS order_seq bigint NOT NULL DEFAULT 0;
-- One counter per queue (bizID, order key, target, topic): the last
-- sequence assigned. Its row lock orders concurrent commits of one key,
-- whatever center applies them. A new table: it locks nothing that exists.
CREATE TABLE IF NOT EXISTS eventcenter_order_keys (
    biz_id    text   NOT NULL,
    order_key text   NOT NULL,
    target    text   NOT NULL,
    topic     text   NOT NULL,
    last_seq  bigint NOT NULL,
    PRIMARY KEY (biz_id, order_key, target, topic)
);
-- The messages that hold their key (sequenced, pending or DEAD): the claim
-- rule's NOT EXISTS and the fast path's check read a few entries per key.
-- Built CONCURRENTLY: inserts go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_order_holders
    ON eventcenter_messages (biz_id, order_key, target, topic, order_seq)
    WHERE order_seq > 0 AND send_status IN (0, 2);
