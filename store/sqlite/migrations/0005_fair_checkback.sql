-- Fair check-back claims: the claim shares its limit between
-- the bizIDs with due PREPAREs, each bizID's oldest due first. This index
-- lists the PREPARED rows by bizID and due time: the claim finds the
-- bizIDs by skipping from one to the next and reads each bizID's due rows
-- in order.
CREATE INDEX eventcenter_messages_verify_due_biz
    ON eventcenter_messages (biz_id, verify_next_at, partition) WHERE status = 1;
