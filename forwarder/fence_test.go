package forwarder_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

var errCut = errors.New("connection to the store cut")

// cutStore is a store an instance can be cut off from: every call fails
// while cut is set.
type cutStore struct {
	forwarder.Store
	cut atomic.Bool
}

func (s *cutStore) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	if s.cut.Load() {
		return nil, errCut
	}
	return s.Store.ClaimSends(ctx, c)
}

func (s *cutStore) MarkSent(ctx context.Context, sent []store.Sent) error {
	if s.cut.Load() {
		return errCut
	}
	return s.Store.MarkSent(ctx, sent)
}

func (s *cutStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if s.cut.Load() {
		return store.ApplyResult{}, errCut
	}
	return s.Store.Apply(ctx, req)
}

// Fencing: instance A has a message queued behind a send that hangs when
// A is cut off from its broker and its store. Past the lease (and past A's
// broker session: its partition moves to B, which A cannot learn while cut
// off) B claims the message and sends it. When A's links heal, A does not
// send it again: its lease ran out while it waited, so it is not A's any
// more. (What A had already put on the wire when the cut began may still
// arrive: a duplicate with the same ec-id, the at-least-once promise.)
func TestLeaseRanOutWhileQueuedIsNotSent(t *testing.T) {
	t.Parallel()
	clk := newClock()
	mem := memStore{memstore.New(clk.Now)}
	quiet := slog.New(slog.DiscardHandler)
	start := func(st forwarder.Store, owned *ingest.Ownership, tg *fakeTarget, reg *prometheus.Registry) *forwarder.Forwarder {
		f, err := forwarder.New(forwarder.Config{
			Targets: map[string]forwarder.Target{"main": tg}, Concurrency: 1, BatchSize: 1,
			ScanInterval: 10 * time.Millisecond, Lease: testLease, SendTimeout: 20 * time.Second,
			MarkInterval: 5 * time.Millisecond, Now: clk.Now, Logger: quiet, Registerer: reg,
			StoreBackoff: forwarder.Backoff{Base: time.Millisecond, Cap: 10 * time.Millisecond},
		}, st, owned)
		require.NoError(t, err)
		require.NoError(t, f.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = f.Stop(ctx)
		})
		return f
	}
	ownedA, ownedB := ingest.NewOwnership(), ingest.NewOwnership()
	ownedA.Assign(0)
	broker := make(chan struct{}) // A's link to its broker: closed when it heals
	inSend := make(chan struct{}, 1)
	tgA, tgB := &fakeTarget{gate: broker, inSend: inSend}, &fakeTarget{}
	stA := &cutStore{Store: mem}
	a := &harness{reg: prometheus.NewRegistry()}
	fA := start(stA, ownedA, tgA, a.reg)
	start(mem, ownedB, tgB, prometheus.NewRegistry())

	var changes []store.Change
	for _, k := range []string{"in-flight", "queued"} {
		at := clk.Now()
		changes = append(changes,
			store.Change{BizID: "shop", Key: k, Event: state.Event{Kind: state.KindPrepare, At: at, Body: &state.Body{Payload: []byte(k), Topic: "t"}}},
			store.Change{BizID: "shop", Key: k, Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	res, err := mem.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: testLease})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 2)
	fA.Handoff(res.Sendable)
	<-inSend // A sends "in-flight"; its broker does not answer; "queued" waits behind it

	stA.cut.Store(true) // and A is cut off from its store
	clk.Advance(testLease)
	ownedB.Assign(0) // A's session ran out: B owns the partition (A cannot know)
	for _, k := range []string{"in-flight", "queued"} {
		require.Eventually(t, func() bool {
			m, err := mem.Get(t.Context(), "shop", k)
			require.NoError(t, err)
			return m.SendStatus == state.SendSent
		}, 10*time.Second, time.Millisecond, "B sends %s", k)
	}

	stA.cut.Store(false) // A's links heal
	close(broker)
	require.Eventually(t, func() bool {
		return a.counter(t, "eventcenter_forward_total", "target", "main", "result", "deferred") == 1 ||
			tgA.sentIDs()["shop:queued"] > 0
	}, 10*time.Second, time.Millisecond, "A's worker reached the queued message")
	require.NotContains(t, tgA.sentIDs(), "shop:queued", "A sent a message whose lease had run out, which B had sent")
	require.Equal(t, map[string]int{"shop:in-flight": 1, "shop:queued": 1}, tgB.sentIDs())
	t.Logf("A sent %v (on the wire before the cut), B sent %v", tgA.sentIDs(), tgB.sentIDs())
}
