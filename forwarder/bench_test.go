package forwarder_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func benchMessage(i int) state.Message {
	return state.Message{
		ID: int64(i + 1), BizID: "shop", Key: fmt.Sprintf("order-%08d", i), Partition: 0,
		Status: state.Committed, HasBody: true, Topic: "payments", ForwardKey: "user-42",
		Payload: make([]byte, 512),
		Headers: []envelope.Header{
			{Key: "trace-id", Value: []byte("4bf92f3577b34da6a3ce929d0e0e4736")},
			{Key: "content-type", Value: []byte("application/json")},
		},
		DecidedAt: time.Now(), LeaseToken: 1,
	}
}

func BenchmarkBuildRecord(b *testing.B) {
	m := benchMessage(1)
	b.ReportAllocs()
	var r forwarder.Record
	for b.Loop() {
		r = forwarder.BuildRecord(&m)
	}
	_ = r
}

// markStore counts sent marks and wakes a waiter.
type markStore struct {
	marked atomic.Int64
	wake   chan struct{}
}

func (s *markStore) ClaimSends(context.Context, store.Claim) ([]state.Message, error) {
	return nil, nil
}
func (s *markStore) Apply(context.Context, store.ApplyRequest) (store.ApplyResult, error) {
	return store.ApplyResult{}, nil
}
func (s *markStore) MarkSent(_ context.Context, sent []store.Sent) error {
	s.marked.Add(int64(len(sent)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// ackTarget acknowledges everything at once.
type ackTarget struct{}

func (ackTarget) Send(_ context.Context, recs []forwarder.Record) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	for i := range res {
		res[i].Ref = "ok"
	}
	return res
}
func (ackTarget) Close() error { return nil }

// BenchmarkForward measures the forwarder's own cost per message: handoff,
// batching, record building, a target that acks at once, and batched sent
// marks on a store that only counts them.
func BenchmarkForward(b *testing.B) {
	const chunk = 1024
	msgs := make([]state.Message, chunk)
	for i := range msgs {
		msgs[i] = benchMessage(i)
	}
	st := &markStore{wake: make(chan struct{}, 1)}
	owned := ingest.NewOwnership()
	owned.Assign(0)
	f, err := forwarder.New(forwarder.Config{
		Targets:      map[string]forwarder.Target{"t": ackTarget{}},
		ScanInterval: time.Hour,
		MarkBatch:    512,
		MarkInterval: time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	}, st, owned)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := f.Stop(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	b.ReportAllocs()
	var want int64
	for b.Loop() {
		f.Handoff(msgs)
		want += chunk
		for st.marked.Load() < want {
			<-st.wake
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(want), "ns/msg")
	b.ReportMetric(float64(want)/b.Elapsed().Seconds(), "msgs/s")
}
