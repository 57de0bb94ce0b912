// Package forwarder sends committed messages to their named targets (Kafka,
// RocketMQ): messages handed over by ingest at once (fast path) and those a
// periodic scan of owned partitions finds due (restarts, expired leases,
// retries). Sent marks are batched; failures back off with jitter and end DEAD
// after the configured attempts.
package forwarder
