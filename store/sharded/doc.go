// Package sharded spreads the store over several inner stores (shards),
// each usually its own PostgreSQL server, so the store scales out the way
// Kafka scales the control topic.
//
// Every message key (bizID:messageKey) maps to one of Buckets virtual
// buckets by a stable hash (FNV-1a, 32 bits), independent of the Kafka
// partition count, so a partition increase never splits one message across
// databases. A configured map sends each bucket to exactly one shard.
//
// Apply splits a batch by shard and applies each part in one transaction of
// its shard, concurrently. All changes of one key go to one shard, so the
// state machine stays per key. A batch spanning shards is not atomic across
// them: when one shard fails, the others may have committed. That is safe
// because ingest commits its Kafka offsets only after Apply returns without
// error, and replaying changes is a no-op.
//
// Claims, scans, counts, lists (merged newest first, with a cursor holding
// every shard's position), gauges, retry-now, purge and audit queries fan
// out to every shard and merge. Message and audit IDs seen through this
// store carry the shard in their low 8 bits (inner ID << 8 | shard), so
// MarkSent and audit paging find their shard; at most MaxShards shards.
//
// Moving buckets between shards: see MoveBuckets and docs/shards.md.
package sharded
