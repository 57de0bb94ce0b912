-- Scheduled delivery: a PREPARE's ec-deliver-at (or ec-delay,
-- resolved when it was read), in Unix microseconds; NULL for none. A
-- committed message is first due at max(commit, deliver_at): the send
-- claim's due-time rule and index serve it unchanged.
ALTER TABLE eventcenter_messages ADD COLUMN deliver_at INTEGER;
