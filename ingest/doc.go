// Package ingest consumes the control topic in a Kafka consumer group and
// applies its envelopes to the store.
//
// A poll takes what the client has buffered and, when that is something
// and records arrive faster than one per batch, also waits briefly
// (Config.FreshFetchWait) for the fetch that taking it sent: franz-go buffers one fetch per broker, answered just after the
// previous poll, so without that second look the records that reached the
// broker while the previous batch was applied would wait for one more
// apply.
//
// Each poll is split per partition. A partition's records are decoded
// (envelope.Decoder); the good ones become store.Changes, the malformed
// ones are copied to the dead-letter topic with the reason. The partitions
// of a poll are grouped (Config.Parallelism, Config.MinApplyRecords) and
// each group is applied with one Store.Apply call: one database
// transaction, in which the store folds a PREPARE and a COMMIT of one key
// into one insert. Under light load a poll is one transaction, whatever the
// number of partitions; under heavy load it is a few large ones applied in
// parallel. Per-transaction cost, not per-record cost, is what a small
// batch pays for, so this keeps the store's work per message low at every
// rate (measured in docs/performance.md). Messages that became sendable are
// sent inside the batch's transaction, before its write, or handed to the
// forwarder at once after it, by the store New is given (the forwarder's
// fast path, forwarder.Applier). Offsets are committed only after the
// store committed, so a crash replays the batch: replays are no-ops, except
// that a message sent inline by a transaction that never committed is sent
// again (at least once, with its stable id).
//
// When the store fails, the same batch is retried with capped backoff until
// it succeeds or the ingester is stopped; nothing is committed meanwhile,
// and nothing is skipped. If a rebalance
// waits while a group keeps failing, the group is abandoned, its partitions
// rewound to their batches' first offsets and the rebalance let through, so a
// database outage does not get the member thrown out of the group.
//
// # Dead letters
//
// Bad input never stops a partition. A malformed record, or a PREPARE whose
// forwarded record would exceed MaxPayload + RecordOverhead (no target could
// send it), is copied to the dead-letter topic with ec-dlq-reason,
// ec-dlq-topic, ec-dlq-partition and ec-dlq-offset. Copies that fit in a
// batch of franz-go's default size (1,000,012 bytes, below a default
// broker's max.message.bytes) are produced together; larger ones, up to
// MaxPayload plus headers, one at a time through a second client sized for
// them. A copy the broker or client refuses for good (too large, not
// authorized, unknown topic, rejected), or that keeps failing for
// DLQRetryBudget, is written again without its value, with
// ec-dlq-value-dropped (why) and ec-dlq-size (the original size), and
// counted in eventcenter_dlq_stripped_total{cause}. If that fails too
// (within another budget), the record is dropped: logged at error level with
// its partition, offset and key, counted in
// eventcenter_dlq_dropped_total{cause}, and skipped. CheckDLQTopic, also run
// when the consumer starts, says whether the dead-letter topic exists.
//
// Stop stops polling, lets the batch in hand finish (a failing one is not
// retried any more), commits what was applied, leaves the group (its final
// revoke commits again) and waits. Whatever was not committed is replayed
// by the partition's next owner; replays are no-ops in the store.
//
// The ingester also owns the set of assigned control partitions
// (Ownership): the cooperative-sticky balancer assigns and revokes
// partitions, and the verifier and forwarder act only on owned ones.
// Rebalances are blocked while a poll is processed (BlockRebalanceOnPoll),
// and offsets applied for a revoked partition are committed before it is
// given up.
//
// # Lanes
//
// An Ingester consumes one control topic. A center with control lanes
// (extra control topics, so that one tenant class's backlog never delays
// another's ingest) runs one Ingester per lane, each with its own client
// and consumer group, sharing one Ownership and one Metrics; Config.Lane
// maps the lane's Kafka partitions to store partitions (lane.go).
package ingest
