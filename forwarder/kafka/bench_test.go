package kafka_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

func benchCluster(b *testing.B) *kfake.Cluster {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "payments"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

func benchTarget(b *testing.B, c *kfake.Cluster) *kafka.Target {
	b.Helper()
	tg, err := kafka.New(kafka.Config{Name: "kafka", Brokers: c.ListenAddrs(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tg.Close() })
	return tg
}

// BenchmarkSend measures one Send of 256 records of 512 bytes to kfake.
func BenchmarkSend(b *testing.B) {
	c := benchCluster(b)
	tg := benchTarget(b, c)
	recs := make([]forwarder.Record, 256)
	for i := range recs {
		id := fmt.Sprintf("shop:order-%d", i)
		recs[i] = forwarder.Record{ID: id, Topic: "payments", Key: fmt.Sprintf("user-%d", i%50),
			Value: make([]byte, 512), Headers: []envelope.Header{{Key: "ec-id", Value: []byte(id)}}}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range tg.Send(b.Context(), recs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		n += len(recs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// countStore counts sent marks and wakes a waiter.
type countStore struct {
	marked atomic.Int64
	wake   chan struct{}
}

func (s *countStore) ClaimSends(context.Context, store.Claim) ([]state.Message, error) {
	return nil, nil
}

func (s *countStore) Apply(context.Context, store.ApplyRequest) (store.ApplyResult, error) {
	return store.ApplyResult{}, nil
}

func (s *countStore) MarkSent(_ context.Context, sent []store.Sent) error {
	s.marked.Add(int64(len(sent)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// BenchmarkForwardToKafka measures the forwarder with the Kafka target on
// kfake (the store only counts marks): handoff to acknowledged and marked.
func BenchmarkForwardToKafka(b *testing.B) {
	c := benchCluster(b)
	tg := benchTarget(b, c)
	const chunk = 1024
	msgs := make([]state.Message, chunk)
	for i := range msgs {
		msgs[i] = state.Message{ID: int64(i + 1), BizID: "shop", Key: fmt.Sprintf("order-%d", i),
			Status: state.Committed, HasBody: true, Topic: "payments", ForwardKey: fmt.Sprintf("user-%d", i%50),
			Payload: make([]byte, 512), DecidedAt: time.Now()}
	}
	st := &countStore{wake: make(chan struct{}, 1)}
	owned := ingest.NewOwnership()
	owned.Assign(0)
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"kafka": tg}, ScanInterval: time.Hour,
		MarkBatch: 512, MarkInterval: time.Millisecond, Logger: quiet,
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
	b.ReportMetric(float64(want)/b.Elapsed().Seconds(), "msgs/s")
}

// markCounter wraps a store to count sent marks and wake a waiter.
type markCounter struct {
	store.Store
	marked atomic.Int64
	wake   chan struct{}
}

func (s *markCounter) MarkSent(ctx context.Context, sent []store.Sent) error {
	if err := s.Store.MarkSent(ctx, sent); err != nil {
		return err
	}
	s.marked.Add(int64(len(sent)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// BenchmarkCommitAndForwardSQLite measures what a message costs from its
// commit to its sent mark with the SQLite store: 1,024 PREPARE+COMMIT pairs
// applied in one transaction (as ingest does), handed over, produced to
// kfake and marked sent.
func BenchmarkCommitAndForwardSQLite(b *testing.B) {
	sq, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "ec.db"), sqlite.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	benchCommitAndForward(b, sq)
}

// BenchmarkCommitAndForwardPostgres is the same on PostgreSQL (skips
// without EVENTCENTER_TEST_POSTGRES).
func BenchmarkCommitAndForwardPostgres(b *testing.B) {
	pool := pgtest.Pool(b)
	if err := postgres.Migrate(b.Context(), pool); err != nil {
		b.Fatal(err)
	}
	pg, err := postgres.New(pool, postgres.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	benchCommitAndForward(b, pg)
}

func benchCommitAndForward(b *testing.B, sq store.Store) {
	c := benchCluster(b)
	tg := benchTarget(b, c)
	st := &markCounter{Store: sq, wake: make(chan struct{}, 1)}
	owned := ingest.NewOwnership()
	owned.Assign(0)
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"kafka": tg}, ScanInterval: time.Hour,
		MarkBatch: 512, MarkInterval: time.Millisecond, Logger: quiet,
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
	const chunk = 1024
	payload := make([]byte, 512)
	seq := 0
	var want int64
	b.ReportAllocs()
	for b.Loop() {
		changes := make([]store.Change, 0, 2*chunk)
		now := time.Now()
		for range chunk {
			seq++
			key := fmt.Sprintf("order-%d", seq)
			body := &state.Body{Payload: payload, Topic: "payments", ForwardKey: fmt.Sprintf("user-%d", seq%50)}
			changes = append(changes,
				store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: now, Body: body}},
				store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: now}})
		}
		res, err := sq.Apply(b.Context(), store.ApplyRequest{Changes: changes, SendLease: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		f.Handoff(res.Sendable)
		want += chunk
		for st.marked.Load() < want {
			<-st.wake
		}
	}
	b.ReportMetric(float64(want)/b.Elapsed().Seconds(), "msgs/s")
}
