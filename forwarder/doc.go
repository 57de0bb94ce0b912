// Package forwarder sends committed messages to their named targets (Kafka,
// RocketMQ): messages handed over by ingest at once (fast path) and those a
// periodic scan of owned partitions finds due (restarts, expired leases,
// retries). Sent marks are batched; failures back off with jitter and end DEAD
// after the configured attempts.
//
// # Fast path
//
// Every part that changes messages (ingest, the verifier's check-back
// answers, operator actions) applies through an Applier (Forwarder.Applier,
// or Forwarder.FastPath for a whole store): it sets the send lease (Lease,
// the one lease setting: forward.lease) on the Apply request and, after the
// store committed, hands the messages that became sendable to Handoff. If
// the process dies first, the scan claims them once the lease runs out.
//
// Before that, inside the store transaction and before its write, the
// Applier sends them inline (store.ApplyRequest.Forward, bounded by
// InlineTimeout): those acknowledged are written sent at once, so the
// common message is written once instead of written leased and then marked
// sent (the sent-mark UPDATE was half of PostgreSQL's work per message). Only the rest is leased and handed over: what was not
// acknowledged in time, what names an unconfigured target or one whose
// breaker is open, what belongs to a partition this instance does not own,
// what is already queued or in flight, and what would overtake a queued
// message with the same forward key. A failed inline send costs the
// message no attempt (the regular path makes the counted one) but counts
// for the breaker. If the transaction fails after the send, nothing was
// written and the caller replays (ingest has not committed the offsets),
// so the message is sent again: at least once, with its stable id. A
// store that retries the transaction gets the first try's results (no
// second send).
//
// # Flow
//
//	Handoff ─┐                    ┌─ worker ─┐
//	         ├─ queue per target ─┼─ worker ─┼─ Target.Send ─┬─ sent marks → Store.MarkSent (batched)
//	scan ────┘ (bounded)          └─ worker ─┘               └─ failures → Store.Apply(KindSendFailed)
//
// In words:
//
//   - Handoff applies backpressure: when a target's queue is full it waits
//     for room, at most HandoffWait per call and never past Stop, so that
//     ingest slows to the forwarding rate. A message that still does not fit
//     is dropped and counted (eventcenter_forward_handoff_dropped_total) and
//     its lease is released (state.KindSendDeferred, written with the sent
//     marks; eventcenter_forward_handoff_released_total): it is due at once
//     and the scan, woken, claims it when the queues have room. One whose
//     target's breaker is open (no wait then), or handed over while
//     stopping, is left to its lease: the scan picks it up when the lease
//     ends. The scan itself never waits (a stuck target must not stop the
//     others); what it claims but cannot queue is released for its next
//     round. Its claim runs to its end even when Stop comes (only Stop's
//     context cuts it), and what a claim brings back after Stop came is
//     released, due at once for the partitions' next owner.
//   - The scan runs every ScanInterval and at once when the owned partitions
//     change; it claims (leases) due sends in the owned partitions, no more
//     than the queues have room for.
//   - Each target has Concurrency workers, each with its own queue; a worker
//     takes what is queued, up to BatchSize, and sends it as one batch.
//     Messages with the same forward key share a worker, so they reach the
//     target in the order they were handed over. For a message without an
//     order key that is all: a retry can overtake it. Messages with an
//     order key keep their order across failures (see "Order keys"). A
//     message whose partition is no longer owned when its turn comes is
//     skipped and its lease released, so the new owner claims it at its
//     next scan. So is one whose lease ran out while it waited (fencing: a
//     center cut off from its store and broker may have lost it to another
//     center, which may have sent it); eventcenter_forward_total counts
//     it as deferred.
//   - A success becomes a sent mark, written in batches of MarkBatch or every
//     MarkInterval (like River's job completer). While the store fails, marks
//     are kept and retried with StoreBackoff; the workers slow down when too
//     many wait. A success is never dropped silently: at worst (Stop's
//     context ends with marks unwritten, reported by Stop) the message is sent
//     again after its lease — at least once, with the ec-id header for
//     consumers to drop the duplicate.
//   - A failure is recorded through the state machine with the claim's lease
//     token: the next attempt is due after Backoff (capped exponential with
//     jitter, by attempt), an error marked Permanent (or the last of
//     MaxAttempts) makes the message DEAD with the error kept as its last
//     error. A message naming a target that is not configured is DEAD at
//     once ("forward target \"x\" is not configured").
//   - A target whose batches keep failing (Breaker) is paused: its messages
//     are left to their leases without burning attempts, and after a cooldown
//     one probe batch decides whether it resumes; each failed probe doubles
//     the cooldown (1s up to 30s by default). So a broker outage delays
//     messages but does not drive them all to DEAD. Batches that fail
//     together (one broker error fails every batch in flight to its
//     partition) count once, and failures must last Breaker.FailingFor (5s)
//     before it opens: a short burst of broker errors is retried through
//     quickly instead of being probed one error per cooldown.
//
// # Order keys
//
// With per-key order on (Config.Ordered, the cluster level gate), messages
// of one bizID with the same order key, target and topic are forwarded in
// the order the center applied their COMMITs: none is sent before every
// earlier-committed message of its key was sent, or ended DEAD with its
// bizID set to skip (ReleaseOnDead), or was closed or released by an
// operator. It holds across send failures and retries, breaker pauses,
// lease expiry, rebalances, restarts, kill -9 and several centers, because
// the store decides, not this package's memory: a message gets a sequence
// from its key's counter in the transaction that makes it sendable, and
// no Apply, claim or sent-mark lease hands one out while an
// earlier-sequenced message of its key still holds the key (pending or
// DEAD). A message that fails holds its key (its retries keep their
// place), not other keys. Duplicates stay possible (at least once), never
// before a predecessor's first delivery. Such messages are never sent
// inline: a transaction that fails after an inline send gives its
// sequence back, and a later message could be numbered before one already
// sent. They are written leased and handed over after the commit; one
// held behind an earlier message is parked (unleased) instead. When the
// recorder writes a sent mark of an ordered message through a store that
// implements store.NextClaimer, the next message of the key is leased in
// the same round trip and queued at once (eventcenter_forward_order_chained_total);
// otherwise the mark wakes it and the scan claims it. Consumers see the
// order when a key's records land on one partition or queue (one forward
// key per order key).
//
// A hot key goes in runs: the claims and the chained marks lease behind
// each free head up to a batch of its key's next messages (store.Claim.Run:
// in sequence order, without a gap, on the head's partition), queued
// together on one worker (sequenced messages are sharded by order key),
// which sends them with SendInOrder where the target is an OrderedTarget
// (Kafka: pipelined, in order) and they share one forward key, else head
// of line (one message of a key per Send, the next once it was
// acknowledged); eventcenter_forward_order_run_messages_total{send} counts
// the messages of such batches by path (in_order, head_of_line). Once one of a run is not sent (refused, fenced,
// not queued), the rest of its run is not sent either: their leases are
// released without an attempt (ErrBehindFailed, never DEAD;
// eventcenter_forward_order_behind_failed_total), and they go after it.
//
// # Records
//
// BuildRecord makes the forwarded record: the forward topic and key, the
// payload as value, the producer's headers followed by ec-id
// ("bizID:messageKey"), and the tag (used by RocketMQ targets).
//
// # Life
//
// Start returns at once. When Start's context ends only the scan stops:
// messages handed over are still sent until Stop, because the caller stops
// ingest (which may still hand over) before the forwarder. Stop lets the
// workers finish what is in flight and queued, writes the pending marks and
// failures with Stop's own context, and waits for every goroutine; when that
// context ends first, in-flight sends are cancelled without burning an
// attempt (the lease brings them back) and unwritten marks are reported in
// Stop's error. The forwarder does not close its targets.
//
// # Metrics
//
// eventcenter_forward_total{target,result} (sent, retry, dead, deferred),
// eventcenter_forward_inline_total{target,result} (sent, not_sent),
// eventcenter_forward_duration_seconds{target} (one batch send),
// eventcenter_commit_to_sent_seconds (commit decision to sent mark, or to
// the write of an inline send),
// eventcenter_forward_handoff_dropped_total,
// eventcenter_forward_handoff_released_total, eventcenter_forward_dead_total{target},
// eventcenter_forward_breaker_open{target}. Messages naming an unconfigured
// target are labelled target="unconfigured" (target names from messages are
// producer-chosen and never become labels).
package forwarder
