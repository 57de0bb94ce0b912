package forwarder_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

// clock is the settable clock shared by the store and the forwarder.
type clock = testclock.Clock

func newClock() *clock { return testclock.At(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// fakeTarget records what it is sent; fail decides per record.
type fakeTarget struct {
	mu     sync.Mutex
	recs   []forwarder.Record
	calls  int
	sizes  []int
	first  time.Time
	fail   func(forwarder.Record) error
	gate   chan struct{} // when set, Send waits for it (or ctx)
	inSend chan struct{} // when set, Send signals entry (non-blocking)
	jitter bool          // when set, Send takes a random few hundred µs
	closed bool
}

func (ft *fakeTarget) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	if ft.inSend != nil {
		select {
		case ft.inSend <- struct{}{}:
		default:
		}
	}
	ft.mu.Lock()
	gate, jitter := ft.gate, ft.jitter
	ft.mu.Unlock()
	if jitter {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) // simulated latency, not a wait
	}
	res := make([]forwarder.Result, len(recs))
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			for i := range res {
				res[i].Err = ctx.Err()
			}
			return res
		}
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.first.IsZero() {
		ft.first = time.Now()
	}
	ft.calls++
	ft.sizes = append(ft.sizes, len(recs))
	for i, r := range recs {
		if ft.fail != nil {
			if err := ft.fail(r); err != nil {
				res[i].Err = err
				continue
			}
		}
		// Copy: the forwarder reuses its record slice.
		r.Headers = append([]envelope.Header(nil), r.Headers...)
		ft.recs = append(ft.recs, r)
		res[i].Ref = fmt.Sprintf("fake/%d", len(ft.recs))
	}
	return res
}

func (ft *fakeTarget) Close() error {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.closed = true
	return nil
}

func (ft *fakeTarget) setFail(fn func(forwarder.Record) error) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.fail = fn
}

func (ft *fakeTarget) sent() []forwarder.Record {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return append([]forwarder.Record(nil), ft.recs...)
}

func (ft *fakeTarget) sentIDs() map[string]int {
	ids := map[string]int{}
	for _, r := range ft.sent() {
		ids[r.ID]++
	}
	return ids
}

type harness struct {
	clock   *clock
	st      memStore
	owned   *ingest.Ownership
	targets map[string]*fakeTarget
	reg     *prometheus.Registry
	cfg     forwarder.Config
	f       *forwarder.Forwarder
	seq     int
}

const testLease = 30 * time.Second

// newHarness builds a forwarder over an in-memory store with targets "main"
// (the default) and "other", owning partition 0, and starts it; the test's
// end stops it.
func newHarness(t *testing.T, mod func(*forwarder.Config)) *harness {
	t.Helper()
	return newHarnessWith(t, mod, nil)
}

// newHarnessWith is newHarness with the forwarder's store wrapped by wrap
// (nil: as it is).
func newHarnessWith(t *testing.T, mod func(*forwarder.Config), wrap func(forwarder.Store) forwarder.Store) *harness {
	t.Helper()
	h := &harness{
		clock:   newClock(),
		owned:   ingest.NewOwnership(),
		targets: map[string]*fakeTarget{"main": {}, "other": {}},
		reg:     prometheus.NewRegistry(),
	}
	h.st = memStore{memstore.New(h.clock.Now)}
	h.owned.Assign(0)
	h.cfg = forwarder.Config{
		Targets:       map[string]forwarder.Target{"main": h.targets["main"], "other": h.targets["other"]},
		DefaultTarget: "main",
		ScanInterval:  10 * time.Millisecond,
		Lease:         testLease,
		SendTimeout:   5 * time.Second,
		MarkInterval:  5 * time.Millisecond,
		Backoff:       forwarder.Backoff{Base: time.Second, Cap: 8 * time.Second, Rand: func() float64 { return 0.5 }},
		StoreBackoff:  forwarder.Backoff{Base: time.Millisecond, Cap: 10 * time.Millisecond},
		MaxAttempts:   5,
		Now:           h.clock.Now,
		Registerer:    h.reg,
		Logger:        slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&h.cfg)
	}
	var st forwarder.Store = h.st
	if wrap != nil {
		st = wrap(st)
	}
	f, err := forwarder.New(h.cfg, st, h.owned)
	require.NoError(t, err)
	h.f = f
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	return h
}

// commit creates n committed messages in a partition for a target (as
// ingest does: PREPARE and COMMIT applied, leased for the fast path when
// lease > 0) and returns the sendable rows.
func (h *harness) commit(t *testing.T, n int, partition int32, target string, lease time.Duration) []state.Message {
	t.Helper()
	var changes []store.Change
	for range n {
		h.seq++
		key := fmt.Sprintf("key-%d", h.seq)
		body := &state.Body{
			Payload:    []byte("payload-" + key),
			Headers:    []envelope.Header{{Key: "trace", Value: []byte("t-" + key)}},
			Target:     target,
			Topic:      "biz-topic",
			ForwardKey: "fk-" + key,
			Tag:        "tagA",
			CheckAfter: time.Minute,
		}
		at := h.clock.Now()
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Partition: partition, Event: state.Event{Kind: state.KindPrepare, At: at, Body: body}},
			store.Change{BizID: "shop", Key: key, Partition: partition, Event: state.Event{Kind: state.KindCommit, At: at}},
		)
	}
	res, err := h.st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease})
	require.NoError(t, err)
	require.Len(t, res.Sendable, n)
	return res.Sendable
}

func (h *harness) get(t *testing.T, m state.Message) state.Message {
	t.Helper()
	got, err := h.st.Get(t.Context(), m.BizID, m.Key)
	require.NoError(t, err)
	return got
}

func (h *harness) waitStatus(t *testing.T, m state.Message, want state.SendStatus) state.Message {
	t.Helper()
	var got state.Message
	require.Eventually(t, func() bool {
		got = h.get(t, m)
		return got.SendStatus == want
	}, 10*time.Second, time.Millisecond, "message %s never reached %s", m.MessageID(), want)
	return got
}

var errBroker = errors.New("broker unavailable")

// counter reads a counter's value from the registry by labels (name=value
// pairs); 0 when absent.
func (h *harness) counter(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// histCount reads a histogram's sample count from the registry.
func (h *harness) histCount(t *testing.T, name string) uint64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// gauge reads a gauge's value from the registry by labels.
func (h *harness) gauge(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// memStore is the in-memory store with the count the tests read.
type memStore struct{ *memstore.Store }

// Count returns how many committed messages have the send status.
func (s memStore) Count(st state.SendStatus) int {
	cs, err := s.Counts(context.Background())
	if err != nil {
		panic(err)
	}
	n := 0
	for _, c := range cs {
		if c.Status == state.Committed && c.SendStatus == st {
			n += int(c.N)
		}
	}
	return n
}
