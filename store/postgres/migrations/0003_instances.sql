-- eventcenter:no-transaction
-- Running centers and the feature level each runs at (a heartbeat row each,
-- seen_at written every few seconds by the database's clock). The cluster
-- level is the lowest level among the live rows; features that need every
-- instance at a level switch on only when it is reached. A new table: it
-- locks nothing that exists, so it is online under any load.
CREATE TABLE IF NOT EXISTS eventcenter_instances (
    instance_id text        PRIMARY KEY,
    level       integer     NOT NULL,
    version     text        NOT NULL,
    started_at  timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL
);
