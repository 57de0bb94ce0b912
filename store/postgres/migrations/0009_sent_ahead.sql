-- eventcenter:no-transaction
-- Per-key order written ahead: an ordered message made
-- sendable by a control record is written SENT in the transaction that
-- sequences it, before it is sent, and confirmed by its control
-- partition's sent watermark once the batch's sends are done: one
-- durable write per message instead of two. Columns without a default
-- (NULL: not written ahead) and a new table; the release before this one
-- ignores both, and a center of this release writes ahead only once
-- every live center runs it (cluster level 4).
--
-- sent_ahead_offset: the control record (on the row's partition) that
-- made a message written ahead sendable; NULL otherwise.
ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS sent_ahead_offset bigint;
-- order_pred_partition, order_pred_offset: the control record that
-- sequenced the message's predecessor in its order key, when that batch
-- wrote ahead; the message waits until that partition's watermark
-- reaches it.
ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS order_pred_partition int;
ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS order_pred_offset bigint;
-- The counters remember the control record of the key's last message
-- (last_*), and of the one before it (prev_*: what the upsert returns as
-- the predecessor of the batch's first message of the key).
ALTER TABLE eventcenter_order_keys ADD COLUMN IF NOT EXISTS last_partition int;
ALTER TABLE eventcenter_order_keys ADD COLUMN IF NOT EXISTS last_offset bigint;
ALTER TABLE eventcenter_order_keys ADD COLUMN IF NOT EXISTS prev_partition int;
ALTER TABLE eventcenter_order_keys ADD COLUMN IF NOT EXISTS prev_offset bigint;
-- One row per control partition: every message written ahead at or
-- below sent_offset was sent or written back to pending. Updated once
-- per batch; fill factor 50 keeps the updates HOT.
CREATE TABLE IF NOT EXISTS eventcenter_sent_watermarks (
    partition int PRIMARY KEY,
    sent_offset bigint NOT NULL
) WITH (fillfactor = 50);
