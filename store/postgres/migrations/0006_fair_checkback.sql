-- eventcenter:no-transaction
-- Fair check-back claims: the claim shares its limit between
-- the bizIDs with due PREPAREs, each bizID's oldest due first. This index
-- lists the PREPARED rows by bizID and due time: the claim finds the
-- bizIDs by skipping from one to the next (a few entries each) and reads
-- each bizID's due rows in order, so a bizID with 100,000 stale PREPAREs
-- costs the others nothing. The partition is carried so the owned
-- partitions are filtered in the index. Built CONCURRENTLY: inserts go on
-- meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_verify_due_biz
    ON eventcenter_messages (biz_id, verify_next_at, partition) WHERE status = 1;
