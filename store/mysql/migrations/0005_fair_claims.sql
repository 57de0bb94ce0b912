-- Fair claims: the forwarder's claim lists the bizIDs with due
-- sends and their oldest due time (a loose index scan of GROUP BY biz_id:
-- one probe per bizID) and reads each bizID's oldest due rows in order, by
-- this index (send_due_at is NULL unless the row is a pending send; the
-- primary key in every entry orders rows due at the same time). One online
-- ALTER (ALGORITHM=INPLACE, LOCK=NONE: reads and writes go on; the server
-- refuses rather than lock).
ALTER TABLE eventcenter_messages
    ADD KEY eventcenter_messages_send_due_biz (biz_id, send_due_at),
    ALGORITHM=INPLACE, LOCK=NONE;
