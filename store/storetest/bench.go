package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// BatchSize is the lifecycle benchmarks' batch size.
const BatchSize = 1000

// BenchPayload is the payload size of the lifecycle benchmarks.
const BenchPayload = 256

// LifecycleBatch returns the PREPARE and COMMIT changes of one benchmark
// batch: n messages with fresh keys, spread over 8 partitions.
func LifecycleBatch(round, n int, at time.Time) (prepares, commits []store.Change) {
	payload := make([]byte, BenchPayload)
	prepares = make([]store.Change, n)
	commits = make([]store.Change, n)
	for i := range n {
		k := BenchKey(round, i)
		part := int32(i % 8)
		prepares[i] = store.Change{BizID: "bench", Key: k, Partition: part, Event: state.Event{
			Kind: state.KindPrepare, At: at, Body: &state.Body{Payload: payload, Topic: "orders",
				ForwardKey: k, Verify: "http://producer/check", CheckAfter: time.Minute},
		}}
		commits[i] = Commit("bench", k, part, at)
	}
	return prepares, commits
}

// BenchKey is the message key of message i of a benchmark round.
func BenchKey(round, i int) string { return fmt.Sprintf("order-%08d-%05d", round, i) }

// Lifecycle runs one batch's store lifecycle: Apply the prepares, Apply the
// commits (sendables come back leased), MarkSent them.
func Lifecycle(ctx context.Context, s store.Store, prepares, commits []store.Change) error {
	if _, err := s.Apply(ctx, store.ApplyRequest{Changes: prepares, SendLease: time.Minute}); err != nil {
		return err
	}
	res, err := s.Apply(ctx, store.ApplyRequest{Changes: commits, SendLease: time.Minute})
	if err != nil {
		return err
	}
	if len(res.Sendable) != len(commits) {
		return fmt.Errorf("%d sendable, want %d", len(res.Sendable), len(commits))
	}
	sent := make([]store.Sent, len(res.Sendable))
	for i, m := range res.Sendable {
		sent[i] = store.Sent{ID: m.ID, Ref: "0@1"}
	}
	return s.MarkSent(ctx, sent)
}

// BenchLifecycle measures Lifecycle in batches of BatchSize and reports
// msgs/s.
func BenchLifecycle(b *testing.B, s store.Store) {
	BenchCompare(b, s, nil)
}

// RawLifecycle does the same writes as Lifecycle without our code, for
// comparison; round numbers the batch (keys as BenchKey).
type RawLifecycle func(ctx context.Context, round int) error

// BenchCompare runs Lifecycle on s and, when raw is set, raw on a batch of
// the same size, interleaved round by round so that both see the same
// machine load. It reports msgs/s (ours), raw-msgs/s and ratio (ours/raw).
func BenchCompare(b *testing.B, s store.Store, raw RawLifecycle) {
	ctx := b.Context()
	var ours, theirs time.Duration
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		prepares, commits := LifecycleBatch(round, BatchSize, time.Now())
		b.StartTimer()
		t0 := time.Now()
		if err := Lifecycle(ctx, s, prepares, commits); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		if raw != nil {
			t0 = time.Now()
			if err := raw(ctx, round); err != nil {
				b.Fatal(err)
			}
			theirs += time.Since(t0)
		}
	}
	b.StopTimer()
	msgs := float64(b.N * BatchSize)
	b.ReportMetric(msgs/ours.Seconds(), "msgs/s")
	if raw != nil {
		b.ReportMetric(msgs/theirs.Seconds(), "raw-msgs/s")
		b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ratio")
	}
}
