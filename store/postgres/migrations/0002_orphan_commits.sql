-- eventcenter:no-transaction
-- Orphan COMMITs: committed, but the PREPARE (the body) never arrived. Only
-- such rows are in this index, so the gauges and the console's list of them
-- read a few entries, not the table. biz_id and created_at never change, and
-- status and has_body are already in the send_due predicate, so updates stay
-- as HOT as before.
--
-- Built CONCURRENTLY: centers keep inserting while it scans the table. A
-- database that applied this step when it was a plain CREATE INDEX keeps its
-- version row and is not touched again (versions are recorded by number).
CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_orphan_commits
    ON eventcenter_messages (biz_id, created_at) WHERE status = 2 AND NOT has_body;
