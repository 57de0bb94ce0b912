-- Per-key order: the order key a PREPARE carries and the
-- sequence assigned from the key's counter in the transaction that makes
-- the message sendable. Constant defaults: rows older releases write stay
-- unordered, as before. One online ALTER (ALGORITHM=INPLACE, LOCK=NONE:
-- reads and writes go on; the server refuses rather than lock). The index
-- holds every row (no partial indexes here): the claim rule's NOT EXISTS
-- and the fast path's check read the entries of one key.
ALTER TABLE eventcenter_messages
    ADD COLUMN order_key VARBINARY(255) NOT NULL DEFAULT '',
    ADD COLUMN order_seq BIGINT NOT NULL DEFAULT 0,
    ADD KEY eventcenter_messages_order_holders (biz_id, order_key, target, topic, order_seq),
    ALGORITHM=INPLACE, LOCK=NONE;

-- One counter per queue (bizID, order key, target, topic): the last
-- sequence assigned. Its row lock orders concurrent commits of one key,
-- whatever center applies them.
CREATE TABLE eventcenter_order_keys (
    biz_id    VARBINARY(255)  NOT NULL,
    order_key VARBINARY(255)  NOT NULL,
    target    VARBINARY(1024) NOT NULL,
    topic     VARBINARY(1024) NOT NULL,
    last_seq  BIGINT          NOT NULL,
    PRIMARY KEY (biz_id, order_key, target, topic)
) ENGINE = InnoDB;
