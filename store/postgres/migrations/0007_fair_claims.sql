-- eventcenter:no-transaction
-- Fair claims: the forwarder's claim serves bizIDs in turn. It
-- lists the bizIDs with pending sends (a skip scan: one index probe per
-- bizID) and reads each bizID's oldest due rows in order, by this index;
-- so a backlog of 200,000 rows of one bizID costs its share of a claim,
-- never a sort of the backlog. The id column orders rows due at the same
-- time, as the claim does. Partial like send_due: only pending sends.
-- Built CONCURRENTLY: inserts and claims go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_send_due_biz
    ON eventcenter_messages (biz_id, send_next_at, id)
    WHERE status = 2 AND send_status = 0 AND has_body;
