package verifier

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// slowProducer answers commit once release is closed; it records the most
// calls it had in flight.
func slowProducer(t *testing.T) (p *producer, release chan struct{}, maxInFlight *atomic.Int32) {
	t.Helper()
	release, maxInFlight = make(chan struct{}), new(atomic.Int32)
	var inFlight atomic.Int32
	p = newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		raiseTo(maxInFlight, inFlight.Add(1))
		defer inFlight.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		reply(w, r, checkback.DecisionCommit)
	})
	return p, release, maxInFlight
}

// A bizID whose endpoint hangs never holds every worker: while its calls
// hang (and its backlog of older PREPAREs is due), another bizID's
// check-backs are claimed and answered, and the slow bizID's are put off
// without spending an attempt (MaxAttempts 1 would park them). With
// BizWorkers = Workers the slow bizID takes every worker and the other
// waits (the test can fail).
func TestSlowBizIDDoesNotHoldEveryWorker(t *testing.T) {
	t.Parallel()
	for _, reserve := range []bool{true, false} {
		t.Run(fmt.Sprintf("reserve=%v", reserve), func(t *testing.T) {
			t.Parallel()
			slow, release, slowMax := slowProducer(t)
			fast := newProducer(t, replying(checkback.DecisionCommit))
			clk := newRealClock()
			cfg := Config{
				Allow:   []string{slow.endpoint("http", ""), fast.endpoint("http", "")},
				Workers: 4, EndpointConcurrency: 4, EndpointQueue: 4,
				ClaimLimit: 16, ClaimAhead: 16, BusyDelay: 20 * time.Millisecond,
				BizIDs: map[string]BizConfig{"slow": {Policy: Policy{MaxAttempts: 1}}},
			}
			if !reserve {
				cfg.BizWorkers = 4
			}
			h := startVerifier(t, clk, newMemStore(clk.Now), cfg)
			for i := range 40 {
				h.prepare("slow", fmt.Sprint("s", i), slow.endpoint("http", "/cb"))
			}
			// The slow bizID holds its share of the workers: 3 with the
			// reserve, all 4 without (waiting for only 3 there let the fast
			// bizID's claim take the fourth worker first).
			held := int32(3)
			if !reserve {
				held = 4
			}
			require.Eventually(t, func() bool { return slowMax.Load() >= held }, 5*time.Second, time.Millisecond)
			for i := range 5 {
				h.prepare("fast", fmt.Sprint("f", i), fast.endpoint("http", "/cb"))
			}
			answered := func() bool {
				for i := range 5 {
					if m := h.get("fast", fmt.Sprint("f", i)); m.Status != state.Committed {
						return false
					}
				}
				return true
			}
			if !reserve {
				require.Never(t, answered, 300*time.Millisecond, 5*time.Millisecond, "every worker held by the slow bizID")
				close(release)
				return
			}
			require.Eventually(t, answered, 5*time.Second, time.Millisecond, "the fast bizID is answered while the slow one hangs")
			require.LessOrEqual(t, slowMax.Load(), int32(3), "the slow bizID holds at most BizWorkers")
			close(release)
			for i := range 40 {
				m := h.waitStatus("slow", fmt.Sprint("s", i), state.Committed)
				require.Equal(t, 1, m.VerifyAttempts, "put off without spending an attempt")
			}
		})
	}
}

// A bizID over its check-back rate waits: calls are spaced by the rate,
// what would wait long is put off (counted by the throttled metric), and
// no attempt is spent (MaxAttempts 1 would park a message whose attempt
// was).
func TestBizRateLimitWaitsWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []time.Time
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, time.Now())
		mu.Unlock()
		reply(w, r, checkback.DecisionCommit)
	})
	clk := newRealClock()
	const n, perSecond = 60, 40
	h := startVerifier(t, clk, newMemStore(clk.Now), Config{
		Allow:     []string{p.endpoint("http", "")},
		BusyDelay: 20 * time.Millisecond,
		BizIDs:    map[string]BizConfig{"limited": {Policy: Policy{MaxAttempts: 1}, Rate: perSecond, Burst: 1}},
	})
	for i := range n {
		h.prepare("limited", fmt.Sprint("k", i), p.endpoint("http", "/cb"))
	}
	for i := range n {
		m := h.waitStatus("limited", fmt.Sprint("k", i), state.Committed)
		require.Equal(t, 1, m.VerifyAttempts, "waiting spends no attempt")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, n)
	span := calls[len(calls)-1].Sub(calls[0])
	// n calls at perSecond with a burst of 1 take (n-1)/perSecond at least.
	require.GreaterOrEqual(t, span, time.Duration(float64(n-1)/perSecond*float64(time.Second))*9/10)
	require.Positive(t, testutil.ToFloat64(h.v.m.bizThrottled.WithLabelValues("limited", limitRate)),
		"the backlog beyond a second's worth was put off, and counted")
}

func TestFairnessConfigValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		b    BizConfig
		want string
	}{
		{BizConfig{Weight: -1}, `BizIDs["a"].Weight: must not be negative (0 means 1), got -1`},
		{BizConfig{Rate: -1}, `BizIDs["a"].Rate: must be a number of check-backs per second, or 0 for no limit, got -1`},
		{BizConfig{Burst: 3}, `BizIDs["a"].Burst: is set without BizIDs["a"].Rate`},
		{BizConfig{Rate: 1, Burst: -3}, `BizIDs["a"].Burst: must not be negative`},
	} {
		err := Config{BizIDs: map[string]BizConfig{"a": c.b}}.WithDefaults().Validate()
		require.ErrorContains(t, err, c.want)
	}
	require.ErrorContains(t, Config{BizWorkers: -1}.WithDefaults().Validate(), "BizWorkers: must be 0 (3/4 of Workers) to Workers (64), got -1")
	require.ErrorContains(t, Config{BizWorkers: 65}.WithDefaults().Validate(), "BizWorkers: must be 0 (3/4 of Workers) to Workers (64), got 65")
	var c Config
	c.setDefaults()
	require.Equal(t, 48, c.BizWorkers, "3/4 of the default 64 workers")
	r, err := c.resolve()
	require.NoError(t, err)
	require.Equal(t, 1, r[""].weight)
	c.BizIDs = map[string]BizConfig{"a": {Rate: 2.5, Weight: 3}}
	r, err = c.resolve()
	require.NoError(t, err)
	require.Equal(t, 3, r["a"].burst, "burst defaults to the rate, rounded up")
	require.Equal(t, 3, r["a"].weight)
}

// One drain puts off every message its full endpoint cannot take, not
// one per wake-up of the loop (a put-off is progress too).
func TestDrainPutsOffABacklogAtOnce(t *testing.T) {
	t.Parallel()
	slow, release, _ := slowProducer(t)
	defer close(release)
	clk := newRealClock()
	st := newMemStore(clk.Now)
	// Due before the verifier starts, so that its first claim holds
	// them all (later claims take no more of a bizID than its full
	// endpoint has room for: fairClaim).
	prepareBacklog(t, st, clk.Now(), "a", 200, slow.endpoint("http", "/cb"))
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{slow.endpoint("http", "")},
		Workers: 4, EndpointConcurrency: 1, EndpointQueue: 1,
		PollInterval: 300 * time.Millisecond, BusyDelay: time.Minute, MaxPutOff: time.Minute,
	})
	// Claims come every 300 ms: put off one per wake-up, 150 would take
	// 45 s.
	require.Eventually(t, func() bool { return h.total("http", outcomeDeferred) >= 150 }, 5*time.Second, time.Millisecond)
}

// fairLog records the fairness each claim asks for.
type fairLog struct {
	testStore
	mu    sync.Mutex
	fairs []store.Fair
}

func (f *fairLog) ClaimCheckbacks(ctx context.Context, cl store.Claim) ([]state.Message, error) {
	f.mu.Lock()
	if cl.FairCheckbacks != nil {
		f.fairs = append(f.fairs, *cl.FairCheckbacks)
	}
	f.mu.Unlock()
	return f.testStore.ClaimCheckbacks(ctx, cl)
}

func (f *fairLog) last() []store.Fair {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.Fair(nil), f.fairs...)
}

// Every claim is fair, with the configured weights; a bizID held back by
// its rate with enough waiting is capped at 0 by the claims while it waits.
func TestClaimsAskForTheFairShare(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionCommit))
	clk := newRealClock()
	st := &fairLog{testStore: newMemStore(clk.Now)}
	h := startVerifier(t, clk, st, Config{
		Allow: []string{p.endpoint("http", "")},
		BizIDs: map[string]BizConfig{
			"heavy": {Weight: 3},
			"slow":  {Rate: 0.5, Burst: 1},
		},
	})
	for i := range 5 {
		h.prepare("slow", fmt.Sprint("s", i), p.endpoint("http", "/cb"))
	}
	require.Eventually(t, func() bool {
		for _, f := range st.last() {
			if m, ok := f.Max["slow"]; ok && m == 0 {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "a rate-held bizID with a second's worth waiting is skipped")
	fs := st.last()
	require.GreaterOrEqual(t, len(fs), 2)
	for _, f := range fs {
		require.Equal(t, map[string]int{"heavy": 3}, f.Weights)
	}
	m := h.get("slow", "s4")
	require.LessOrEqual(t, m.VerifyAttempts, 1, "waiting for the rate spends no attempt")
}

// A bizID at its worker cap is claimed again as soon as few of its
// check-backs are left waiting in memory, not at the next poll: the
// claims skip it while enough wait (fairClaim), and a claim that skipped
// a bizID says nothing about how many of its check-backs are due. With
// the poll an hour away, a backlog many claims deep is answered; when
// the loop waits for the poll after a skipping claim, it is not.
func TestBizIDAtWorkerCapIsClaimedAgainBeforeThePoll(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionCommit))
	clk := newRealClock()
	st := newMemStore(clk.Now)
	const n = 200
	prepareBacklog(t, st, clk.Now(), "lone", n, p.endpoint("http", "/cb"))
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{p.endpoint("http", "")},
		Workers: 4, BizWorkers: 2, EndpointConcurrency: 4,
		ClaimLimit: 8, ClaimAhead: 8, PollInterval: time.Hour,
	})
	for i := range n {
		h.waitStatus("lone", fmt.Sprint("k", i), state.Committed)
	}
	require.Greater(t, st.claimCount(), n/8, "claimed in steps of at most ClaimLimit")
}

// A bizID held back by its rate is claimed no further than what it keeps
// waiting: more would only be put off again, a store write each. Only the
// first claim, made before the verifier knew it was held, brings more.
// Capped at 0 instead (or not capped), every claim that tops its queue up
// puts off what the rate cannot take soon.
func TestRateLimitedBizIDIsClaimedOnlyWhatItKeeps(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionCommit))
	clk := newRealClock()
	st := newMemStore(clk.Now)
	const n, perSecond, claimLimit = 600, 200, 256
	for i := range n {
		res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{{
			BizID: "limited", Key: fmt.Sprint("k", i),
			Event: state.Event{Kind: state.KindPrepare, At: clk.Now(),
				Body: &state.Body{Payload: []byte("payload"), Topic: "orders", Verify: p.endpoint("http", "/cb")}},
		}}})
		require.NoError(t, err)
		require.NoError(t, res.Outcomes[0].Err)
	}
	h := startVerifier(t, clk, st, Config{
		Allow:      []string{p.endpoint("http", "")},
		ClaimLimit: claimLimit, ClaimAhead: 2 * claimLimit, PollInterval: time.Hour,
		BizIDs: map[string]BizConfig{"limited": {Rate: perSecond, Burst: 1}},
	})
	// Every put-off check-back must come back without the (hour-long)
	// poll: the run fails when the answers stop coming for 10s, not when
	// a loaded machine makes them come slowly.
	last, progressed := -1, time.Now()
	for {
		committed := 0
		for i := range n {
			if h.get("limited", fmt.Sprint("k", i)).Status == state.Committed {
				committed++
			}
		}
		if committed == n {
			break
		}
		if committed > last {
			last, progressed = committed, time.Now()
		}
		require.Less(t, time.Since(progressed), 10*time.Second, "answers stopped at %d of %d", committed, n)
		time.Sleep(50 * time.Millisecond)
	}
	keep := 1 + perSecond // the burst and a second's worth
	require.LessOrEqual(t, h.total("http", outcomeDeferred), float64(claimLimit-keep),
		"put off beyond the first claim's excess")
}
