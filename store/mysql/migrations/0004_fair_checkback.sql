-- Fair check-back claims: the claim shares its limit between
-- the bizIDs with due PREPAREs, each bizID's oldest due first. This index
-- lists the PREPARED rows (prepared_biz is NULL for the others) by bizID
-- and due time: the claim reads the due bizIDs with a loose index scan and
-- each bizID's due rows in order. An online ALTER (ALGORITHM=INPLACE,
-- LOCK=NONE: reads and writes go on; the server refuses rather than lock).
ALTER TABLE eventcenter_messages
    ADD INDEX eventcenter_messages_verify_due_biz (prepared_biz, verify_due_at, `partition`),
    ALGORITHM=INPLACE, LOCK=NONE;
