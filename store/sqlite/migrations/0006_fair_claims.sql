-- Fair claims: the forwarder's claim lists the bizIDs with
-- pending sends (one index probe per bizID) and reads each bizID's oldest
-- due rows in order, by this index. Partial like send_due. The id is the
-- rowid, in every index entry: rows due at the same time come in id order.
CREATE INDEX IF NOT EXISTS eventcenter_messages_send_due_biz
    ON eventcenter_messages (biz_id, send_next_at)
    WHERE status = 2 AND send_status = 0 AND has_body = 1;
