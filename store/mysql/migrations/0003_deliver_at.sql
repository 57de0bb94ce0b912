-- Scheduled delivery: a PREPARE's ec-deliver-at (or ec-delay,
-- resolved when it was read); NULL for none. A committed message is first
-- due at max(commit, deliver_at): the send claim's due-time rule and index
-- serve it unchanged. A nullable column at the end: an online ALTER
-- (ALGORITHM=INPLACE, LOCK=NONE: reads and writes go on; the server refuses
-- rather than lock).
ALTER TABLE eventcenter_messages
    ADD COLUMN deliver_at DATETIME(6) NULL,
    ALGORITHM=INPLACE, LOCK=NONE;
