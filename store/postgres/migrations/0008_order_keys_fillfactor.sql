-- Per-key order: every ordered COMMIT adds to its key's counter
-- row. The update changes no indexed column, so it can be HOT (no new
-- primary-key entry) when the row's page has room for the new version;
-- at the default fill factor (100) the pages are full and 56-96% of the
-- updates in ectools bench were not HOT. New pages keep half their space
-- for the updates; existing pages gain it as they are rewritten or as
-- vacuum frees them. A storage parameter: SHARE UPDATE EXCLUSIVE, so
-- reads and writes go on, and nothing is rewritten.
ALTER TABLE eventcenter_order_keys SET (fillfactor = 50);
