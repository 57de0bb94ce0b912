package verifier

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// testStore is a Store tests can read rows from.
type testStore interface {
	Store
	Get(ctx context.Context, bizID, key string) (state.Message, error)
}

func openSQLite(t *testing.T, clk *clock) testStore {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"),
		sqlite.Options{Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// testSendLease is the send lease of the fast path in these tests.
const testSendLease = time.Minute

// fastPath is a Store whose Apply is the forwarder's fast path, as the
// center wires it.
type fastPath struct {
	Store
	fast *forwarder.Applier
}

func (s fastPath) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	return s.fast.Apply(ctx, req)
}

// harness is a running verifier over a store, owning partition 0.
type harness struct {
	t     *testing.T
	clk   *clock
	st    testStore
	owned *ingest.Ownership
	reg   *prometheus.Registry
	fwd   *handoffs
	v     *Verifier
}

// startVerifier starts a verifier with fast test timings; cfg.Now is set to
// clk unless already set.
func startVerifier(t *testing.T, clk *clock, st testStore, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, clk: clk, st: st, owned: ingest.NewOwnership(), reg: prometheus.NewRegistry(), fwd: &handoffs{}}
	h.owned.Assign(0)
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	cfg.Registerer = h.reg
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	if cfg.Workers == 0 && cfg.EndpointConcurrency == 0 {
		// Tests on the manual clock send more messages to one producer
		// than the default cap; put-offs would wait for a clock that does
		// not move.
		cfg.Workers, cfg.EndpointConcurrency = 32, 16
	}
	if cfg.ApplyInterval == 0 {
		cfg.ApplyInterval = 2 * time.Millisecond
	}
	v, err := New(cfg, fastPath{Store: st, fast: forwarder.NewApplier(st, h.fwd, testSendLease)}, h.owned)
	require.NoError(t, err)
	h.v = v
	require.NoError(t, v.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, v.Stop(context.Background())) })
	return h
}

func (h *harness) prepare(bizID, key, verify string) {
	h.t.Helper()
	h.prepareIn(0, bizID, key, verify)
}

func (h *harness) prepareIn(partition int32, bizID, key, verify string) {
	h.t.Helper()
	prepare(h.t, h.st, h.clk.Now(), partition, bizID, key, verify)
}

// prepare writes a PREPARE of bizID:key into st, checked back at verify.
func prepare(t *testing.T, st testStore, at time.Time, partition int32, bizID, key, verify string) {
	t.Helper()
	res, err := st.Apply(context.Background(), store.ApplyRequest{Changes: []store.Change{{
		BizID: bizID, Key: key, Partition: partition,
		Event: state.Event{Kind: state.KindPrepare, At: at,
			Body: &state.Body{Payload: []byte("payload"), Topic: "orders", Verify: verify}},
	}}})
	require.NoError(t, err)
	require.NoError(t, res.Outcomes[0].Err)
}

// prepareBacklog writes n PREPAREs of bizID (keys k0, k1, ...) into st,
// before a verifier starts on it.
func prepareBacklog(t *testing.T, st testStore, at time.Time, bizID string, n int, verify string) {
	t.Helper()
	for i := range n {
		prepare(t, st, at, 0, bizID, fmt.Sprint("k", i), verify)
	}
}

func (h *harness) get(bizID, key string) state.Message {
	h.t.Helper()
	m, err := h.st.Get(context.Background(), bizID, key)
	require.NoError(h.t, err)
	return m
}

// waitFor waits until the message satisfies cond.
func (h *harness) waitFor(bizID, key string, what string, cond func(m state.Message) bool) state.Message {
	h.t.Helper()
	// A safety net, not a bound the tests assert: a starved machine can
	// take seconds for what takes milliseconds alone.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		m, err := h.st.Get(context.Background(), bizID, key)
		if err == nil && cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			require.FailNowf(h.t, "condition never met", "%s:%s never %s; last %s attempts=%d next=%s err=%q get error: %v",
				bizID, key, what, m.Status, m.VerifyAttempts, m.VerifyNextAt, m.LastError, err)
		}
		<-tick.C
	}
}

func (h *harness) waitStatus(bizID, key string, s state.Status) state.Message {
	h.t.Helper()
	return h.waitFor(bizID, key, s.String(), func(m state.Message) bool { return m.Status == s })
}

// waitAttempts waits until the unknown (or failed) answer to check-back n
// is recorded (the claim counts the attempt before the call is made).
func (h *harness) waitAttempts(bizID, key string, n int) state.Message {
	h.t.Helper()
	return h.waitFor(bizID, key, fmt.Sprintf("answered at attempt %d", n), func(m state.Message) bool {
		return m.VerifyAttempts == n && strings.HasPrefix(m.LastError, fmt.Sprintf("check-back %d via ", n))
	})
}

func (h *harness) total(proto, outcome string) float64 {
	return testutil.ToFloat64(h.v.m.total.WithLabelValues(proto, outcome))
}
