package forwarder_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// TestRebalanceHandsMessagesOver runs two instances on one store: A owns
// partition 0 and has messages in flight and queued when the partition moves
// to B. A finishes what was in flight, skips what was queued and releases
// their leases; B sends the rest at once, the clock standing still (they
// used to wait out their leases: 30 s by default, after every rebalance
// and every graceful stop). Every message is sent exactly once.
func TestRebalanceHandsMessagesOver(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"), sqlite.Options{Now: clk.Now, Logger: quiet})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		rebalance(t, clk, st)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		pool := pgtest.Pool(t)
		require.NoError(t, postgres.Migrate(t.Context(), pool))
		st, err := postgres.New(pool, postgres.Options{Now: clk.Now, Logger: quiet})
		require.NoError(t, err)
		rebalance(t, clk, st)
	})
}

func rebalance(t *testing.T, clk *clock, st store.Store) {
	quiet := slog.New(slog.DiscardHandler)

	start := func(owned *ingest.Ownership, tg *fakeTarget) *forwarder.Forwarder {
		f, err := forwarder.New(forwarder.Config{
			Targets: map[string]forwarder.Target{"main": tg}, Concurrency: 1, BatchSize: 1,
			ScanInterval: 10 * time.Millisecond, Lease: testLease, SendTimeout: 5 * time.Second,
			MarkInterval: 5 * time.Millisecond, Now: clk.Now, Logger: quiet,
		}, st, owned)
		require.NoError(t, err)
		require.NoError(t, f.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, f.Stop(ctx))
		})
		return f
	}
	ownedA, ownedB := ingest.NewOwnership(), ingest.NewOwnership()
	ownedA.Assign(0)
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	tgA := &fakeTarget{gate: gate, inSend: inSend}
	tgB := &fakeTarget{}
	fA := start(ownedA, tgA)
	start(ownedB, tgB)

	var changes []store.Change
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		at := clk.Now()
		changes = append(changes,
			store.Change{BizID: "shop", Key: k, Event: state.Event{Kind: state.KindPrepare, At: at, Body: &state.Body{Payload: []byte(k), Topic: "t"}}},
			store.Change{BizID: "shop", Key: k, Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: testLease})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 5)
	fA.Handoff(res.Sendable)
	<-inSend // A is sending the first; four wait in its queue

	ownedA.Revoke(0)
	ownedB.Assign(0)
	close(gate)
	require.Eventually(t, func() bool { return len(tgA.sentIDs()) == 1 }, 5*time.Second, time.Millisecond)
	first := tgA.sent()[0].ID
	require.Eventually(t, func() bool {
		m, err := st.Get(t.Context(), "shop", first[len("shop:"):])
		require.NoError(t, err)
		return m.SendStatus == state.SendSent
	}, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(tgB.sentIDs()) == 4 }, 5*time.Second, time.Millisecond,
		"B sends what A skipped without waiting for the leases")
	for _, k := range keys {
		require.Eventually(t, func() bool {
			m, err := st.Get(t.Context(), "shop", k)
			require.NoError(t, err)
			return m.SendStatus == state.SendSent
		}, 5*time.Second, time.Millisecond, k)
	}
	require.Len(t, tgA.sentIDs(), 1, "A sent messages of a partition it no longer owns")
	require.NotContains(t, tgB.sentIDs(), first)
}
