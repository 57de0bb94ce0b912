package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// BenchmarkFold measures folding one ingest batch of 1,000 changes: the
// PREPARE and COMMIT of 500 new messages, in poll order (go test -run '^$'
// -bench Fold -benchmem ./store/). Refs is what a driver calls first to
// know which rows to load; both are measured per batch, and ns/change is
// reported.
func BenchmarkFold(b *testing.B) {
	const n = 500
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	payload := make([]byte, 256)
	changes := make([]store.Change, 0, 2*n)
	for i := range n {
		k := fmt.Sprintf("order-%06d", i)
		changes = append(changes, store.Change{BizID: "bench", Key: k, Partition: int32(i % 8), Event: state.Event{
			Kind: state.KindPrepare, At: at, Body: &state.Body{Payload: payload, Topic: "orders", ForwardKey: k,
				Verify: "http://producer/check", CheckAfter: time.Minute}}})
	}
	for i := range n {
		k := fmt.Sprintf("order-%06d", i)
		changes = append(changes, store.Change{BizID: "bench", Key: k, Partition: int32(i % 8),
			Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	loaded := map[store.MessageRef]*state.Message{} // all new: nothing loaded
	b.Run("fold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := store.Fold(loaded, changes)
			if len(f.Inserts) != n || len(f.Sendable) != n {
				b.Fatalf("%d inserts, %d sendable", len(f.Inserts), len(f.Sendable))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(changes)), "ns/change")
	})
	b.Run("refs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if refs := store.Refs(changes); len(refs) != n {
				b.Fatalf("%d refs", len(refs))
			}
		}
	})
}
