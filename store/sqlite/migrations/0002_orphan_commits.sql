-- Orphan COMMITs: committed, but the PREPARE (the body) never arrived. Only
-- such rows are in this index, so the gauges (biz_id, created_at: covering)
-- and the console's list of them (id, newest first) read a few entries, not
-- the table.
CREATE INDEX eventcenter_messages_orphan_commits
    ON eventcenter_messages (id, biz_id, created_at) WHERE status = 2 AND has_body = 0;
