package ingest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// witness records which ingester applied which change.
type witness struct {
	mu      sync.Mutex
	applied map[string][]string // "biz:key/kind" → ingester names
}

// tagged is one ingester's view of a shared store.
type tagged struct {
	Store
	name string
	w    *witness
}

func (s tagged) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	res, err := s.Store.Apply(ctx, req)
	if err == nil {
		s.w.mu.Lock()
		for _, c := range req.Changes {
			k := c.BizID + ":" + c.Key + "/" + c.Event.Kind.String()
			s.w.applied[k] = append(s.w.applied[k], s.name)
		}
		s.w.mu.Unlock()
	}
	return res, err
}

// split tells whether a and b own disjoint, non-empty sets covering n
// partitions.
func split(n int32, a, b *Ownership) bool {
	pa, pb := a.Partitions(), b.Partitions()
	if len(pa) == 0 || len(pb) == 0 || len(pa)+len(pb) != int(n) {
		return false
	}
	all := slices.Sorted(slices.Values(append(slices.Clone(pa), pb...)))
	return slices.Equal(all, []int32{0, 1, 2, 3}[:n])
}

func TestTwoIngestersSplitPartitionsAndApplyEachRecordOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4)
	st, fwd := newMemStore(), &handoffs{}
	w := &witness{applied: map[string][]string{}}
	ownA, ownB := NewOwnership(), NewOwnership()
	e.start(e.config(), tagged{st, "a", w}, fwd, ownA)
	require.Eventually(t, func() bool { return len(ownA.Partitions()) == 4 }, waitFor, tick)
	e.start(e.config(), tagged{st, "b", w}, fwd, ownB)
	require.Eventually(t, func() bool { return split(4, ownA, ownB) }, waitFor, tick)

	e.lifecycle("shop", 0, 200)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 200 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.True(t, split(4, ownA, ownB), "still split")

	w.mu.Lock()
	defer w.mu.Unlock()
	require.Len(t, w.applied, 400)
	by := map[string]int{}
	for k, names := range w.applied {
		require.Len(t, names, 1, "%s applied by %v", k, names)
		by[names[0]]++
	}
	require.Positive(t, by["a"])
	require.Positive(t, by["b"])
	require.Len(t, fwd.all(), 200)
}

func TestMemberLeavingMidStreamLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4)
	st := newMemStore()
	ownA, ownB := NewOwnership(), NewOwnership()
	e.start(e.config(), st, nil, ownA)
	b := e.start(e.config(), st, nil, ownB)
	require.Eventually(t, func() bool { return split(4, ownA, ownB) }, waitFor, tick)

	const chunks, per = 20, 25
	produced := make(chan int, chunks)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range chunks {
			e.lifecycle("shop", i*per, per)
			produced <- (i + 1) * per
		}
	})
	// Stop b once part of the stream is in.
	for n := range produced {
		if n >= chunks*per/3 {
			break
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Stop(ctx))
	require.Empty(t, ownB.Partitions())
	wg.Wait()

	require.Eventually(t, func() bool { return len(ownA.Partitions()) == 4 }, waitFor, tick)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == chunks*per }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
}

func TestStopFinishesBatchInHandAndCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	// Every record is in before ingest starts, so that its first fetch,
	// the batch in hand, holds them all: a producer may send the twenty
	// in more than one request, and a fetch between them would take the
	// first part only.
	e.lifecycle("shop", 0, 10)
	in := e.start(e.config(), st, nil, NewOwnership())
	<-st.entered

	stopped := make(chan error, 1)
	go func() { stopped <- in.Stop(t.Context()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v before the batch in hand was applied", err)
	default:
	}
	close(st.gate)
	require.NoError(t, <-stopped)
	require.Equal(t, 10, st.countStatus(state.Committed, true))
	require.True(t, e.committedAll(), "what was applied is committed")
}

func TestStopWhileStoreDownCommitsNothingAndNextOwnerApplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	st := newMemStore()
	st.failures.Store(-1)
	in := e.start(e.config(), st, nil, NewOwnership())
	e.lifecycle("shop", 0, 20)
	require.Eventually(t, func() bool { return st.errs.Load() >= 3 }, waitFor, tick)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, in.Stop(ctx), "a retry is abandoned at once on stop")
	require.Zero(t, e.committedCount())

	st.failures.Store(0)
	e.start(e.config(), st, nil, NewOwnership())
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 20 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
}

func TestStopDeadlineAbandonsBatchUncommitted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	in := e.start(e.config(), st, nil, NewOwnership())
	e.lifecycle("shop", 0, 5)
	<-st.entered

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := in.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, st.applyCount())
	require.Zero(t, e.committedCount())
}

func TestStartContextEndStopsConsumer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	owned := NewOwnership()
	in, err := New(e.config(), newMemStore(), owned)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, in.Start(ctx))
	require.NoError(t, in.Start(ctx), "second Start is a no-op (internal/startstop)")
	require.Eventually(t, func() bool { return len(owned.Partitions()) == 2 }, waitFor, tick)
	cancel()
	require.Eventually(t, func() bool { return len(owned.Partitions()) == 0 }, waitFor, tick)
	require.NoError(t, in.Stop(t.Context()))
	require.NoError(t, in.Stop(t.Context()), "Stop twice")
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	in, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, newMemStore(), NewOwnership())
	require.NoError(t, err)
	require.NoError(t, in.Stop(t.Context()))
	require.ErrorContains(t, in.Start(t.Context()), "stopped")
}

func TestConfigValidateNamesTheField(t *testing.T) {
	t.Parallel()
	ok := func() Config { return Config{Brokers: []string{"b:9092"}} }
	for field, mut := range map[string]func(*Config){
		"Brokers":        func(c *Config) { c.Brokers = nil },
		"Brokers[1]":     func(c *Config) { c.Brokers = append(c.Brokers, "") },
		"DLQTopic":       func(c *Config) { c.DLQTopic = DefaultControlTopic },
		"MaxPayload":     func(c *Config) { c.MaxPayload = -1 },
		"MaxPollRecords": func(c *Config) { c.MaxPollRecords = -1 },
		"Parallelism":    func(c *Config) { c.Parallelism = -2 },
		"RetryMin":       func(c *Config) { c.RetryMin = -time.Second },
		"RetryMax":       func(c *Config) { c.RetryMin, c.RetryMax = time.Second, time.Millisecond },
	} {
		c := ok()
		mut(&c)
		_, err := New(c, newMemStore(), NewOwnership())
		require.ErrorContains(t, err, field+":", field)
	}

	_, err := New(ok(), nil, NewOwnership())
	require.ErrorContains(t, err, "store")
	_, err = New(ok(), newMemStore(), nil)
	require.ErrorContains(t, err, "ownership")

	c := ok()
	c.setDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, "eventcenter.control", c.ControlTopic)
	require.Equal(t, "eventcenter.control.dlq", c.DLQTopic)
	require.Equal(t, "eventcenter", c.Group)
	require.Equal(t, 1<<20, c.MaxPayload)
}

// DefaultConfig is what New makes of a zero Config, and every problem
// Validate finds names its field for fieldcheck.Problems.
func TestDefaultConfigIsNewsDefaults(t *testing.T) {
	t.Parallel()
	var zero Config
	zero.setDefaults()
	d := DefaultConfig()
	require.Equal(t, zero.MaxPayload, d.MaxPayload)
	require.Equal(t, zero.Parallelism, d.Parallelism)
	require.Equal(t, zero.MaxPollRecords, d.MaxPollRecords)
	require.Equal(t, zero.RetryMax, d.RetryMax)
	require.Equal(t, zero.DLQTopic, d.DLQTopic)
	require.Equal(t, zero.MaxDelay, d.MaxDelay)
	d.Brokers = []string{"b:9092"}
	require.NoError(t, d.Validate())

	d.Brokers, d.Parallelism, d.MaxPayload = nil, 0, MaxMaxPayload+1
	problems, others := fieldcheck.Problems(d.Validate())
	require.Empty(t, others)
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"Brokers", "MaxPayload", "Parallelism"}, fields)
}

func TestMetricsRegisterOnceOnARegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := Config{Brokers: []string{"b:9092"}, Registerer: reg}
	_, err := New(c, newMemStore(), NewOwnership())
	require.NoError(t, err)
	_, err = New(c, newMemStore(), NewOwnership())
	var are prometheus.AlreadyRegisteredError
	require.True(t, errors.As(err, &are), "%v", err)
	n, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, n)
}

func TestFailingBatchDoesNotHoldARebalance(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4)
	st := newMemStore()
	st.failures.Store(-1)
	cfg := e.config()
	// Were the failing batch to block the rebalance, the join would wait
	// this long (and the test time out first).
	cfg.ClientOptions = append(cfg.ClientOptions, kgo.RebalanceTimeout(time.Minute), kgo.SessionTimeout(time.Minute))
	ownA, ownB := NewOwnership(), NewOwnership()
	a := e.start(cfg, st, nil, ownA)
	e.lifecycle("shop", 0, 40)
	require.Eventually(t, func() bool { return st.errs.Load() >= 3 }, waitFor, tick)

	cfgB := cfg
	cfgB.Registerer = prometheus.NewRegistry()
	e.start(cfgB, st, nil, ownB)
	require.Eventually(t, func() bool { return split(4, ownA, ownB) }, waitFor, tick)
	require.Zero(t, e.committedCount(), "nothing committed while the store is down")
	require.Positive(t, testutil.ToFloat64(a.met.storeErrs))

	st.failures.Store(0)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 40 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
}

func TestLostPartitionsAreGivenUpAndRejoined(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	st := newMemStore()
	owned := NewOwnership()
	in := e.start(e.config(), st, nil, owned)
	require.Eventually(t, func() bool { return len(owned.Partitions()) == 2 }, waitFor, tick)
	e.lifecycle("shop", 0, 10)
	require.Eventually(t, e.committedAll, waitFor, tick)

	// The coordinator forgets the member: its partitions are lost.
	e.cluster.ControlKey(kmsg.Heartbeat.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		resp := kreq.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	require.Eventually(t, func() bool { return testutil.ToFloat64(in.met.lost) == 2 }, waitFor, tick)
	require.Eventually(t, func() bool { return len(owned.Partitions()) == 2 }, waitFor, tick, "rejoined")

	e.lifecycle("shop", 10, 10)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 20 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
}
