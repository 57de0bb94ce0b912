package verifier

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
)

// delayedProducer answers commit after delay, counting the calls and the
// most it had at once.
func delayedProducer(t *testing.T, delay time.Duration) (p *producer, served, maxInFlight *atomic.Int32) {
	t.Helper()
	var inFlight atomic.Int32
	served, maxInFlight = &atomic.Int32{}, &atomic.Int32{}
	p = newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		raiseTo(maxInFlight, inFlight.Add(1))
		defer inFlight.Add(-1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		served.Add(1)
		reply(w, r, checkback.DecisionCommit)
	})
	return p, served, maxInFlight
}

// waitCommitted waits until every key prefix+i (i < n) of bizID is
// committed, failing only when the commits stop coming for 20s (a
// loaded machine makes them come slowly, not never).
func waitCommitted(t *testing.T, h *harness, bizID, prefix string, n int) {
	t.Helper()
	last, progressed := -1, time.Now()
	for {
		committed := 0
		for i := range n {
			if h.get(bizID, fmt.Sprint(prefix, i)).Status == state.Committed {
				committed++
			}
		}
		if committed == n {
			return
		}
		if committed > last {
			last, progressed = committed, time.Now()
		}
		require.Less(t, time.Since(progressed), 20*time.Second, "%s: commits stopped at %d of %d", bizID, committed, n)
		time.Sleep(20 * time.Millisecond)
	}
}

// A backlog behind a slow endpoint at its cap is claimed no further than
// the endpoint has room for (its call slots and its wait queue), and a
// trickle at the pace its put-offs are spaced at: only the first claim,
// made before the verifier knew the endpoint was full, brings the backlog
// at once. Without that cap each claim brings whatever of the backlog is
// due and puts off what does not fit, a lease and a put-off written per
// message, so within a second the whole backlog is claimed and put off.
func TestBacklogBehindAFullEndpointIsClaimedOnlyWhatFits(t *testing.T) {
	t.Parallel()
	const delay, capacity, queue = 50 * time.Millisecond, 2, 4
	p, _, maxInFlight := delayedProducer(t, delay)
	clk := newRealClock()
	st := newMemStore(clk.Now)
	const n, claimLimit = 2000, 128
	prepareBacklog(t, st, clk.Now(), "backlog", n, p.endpoint("http", "/cb"))
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{p.endpoint("http", "")},
		Workers: 32, EndpointConcurrency: capacity, EndpointQueue: queue,
		ClaimLimit: claimLimit, ClaimAhead: 2 * claimLimit,
		BusyDelay: 5 * time.Millisecond, MaxPutOff: 30 * time.Second,
	})
	require.Eventually(t, func() bool { return h.total("http", outcomeDeferred) > 0 }, 20*time.Second, time.Millisecond, "never put off")
	const window = time.Second
	time.Sleep(window)
	putOff := h.total("http", outcomeDeferred)
	// The trickle: one message per put-off spacing, a quarter of the
	// endpoint's time per call and slot.
	trickle := window.Seconds() * 4 * capacity / delay.Seconds()
	t.Logf("%d due behind one endpoint (%s a call, cap %d, queue %d): %.0f put off in the first %s; %d claims",
		n, delay, capacity, queue, putOff, window, st.claimCount())
	require.LessOrEqual(t, putOff, float64(claimLimit-capacity-queue)+trickle+claimLimit/2,
		"put off beyond the first claim's excess and the trickle")
	// Every put-off here is at the full endpoint, counted for the bizID
	// just before it is (the verifier goes on between the reads).
	counted := testutil.ToFloat64(h.v.m.bizThrottled.WithLabelValues("other", limitEndpoint))
	require.GreaterOrEqual(t, counted, putOff, "put-offs at the full endpoint counted for the bizID")
	require.LessOrEqual(t, counted, h.total("http", outcomeDeferred)+1, "only put-offs counted")
	require.Equal(t, 1.0, testutil.ToFloat64(h.v.m.bizHeld.WithLabelValues("other", limitEndpoint)), "shown held by its endpoint")
	require.LessOrEqual(t, maxInFlight.Load(), int32(capacity), "the endpoint's cap held")
	for i := 0; i < n; i += 97 {
		require.LessOrEqual(t, h.get("backlog", fmt.Sprint("k", i)).VerifyAttempts, 1, "a put-off gives its claim's attempt back")
	}
}

// A bizID capped by a full endpoint still has its messages to its other
// endpoints checked back: the trickle beyond the cap brings the full
// endpoint's backlog up at the pace of its put-offs, which move it out of
// the way, until the other endpoint's messages come up; from then that
// endpoint's room counts in the cap. Capped at the room alone, they wait
// until the full endpoint's backlog is nearly served.
func TestFullEndpointDoesNotHoldTheBizIDsOtherEndpoints(t *testing.T) {
	t.Parallel()
	slow, slowServed, slowMax := delayedProducer(t, 20*time.Millisecond)
	fast := clientlibProducer(t)
	clk := newRealClock()
	st := newMemStore(clk.Now)
	const n, capacity = 1000, 2
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{slow.endpoint("http", ""), fast.endpoint("http", "")},
		Workers: 32, EndpointConcurrency: capacity, EndpointQueue: 4,
		ClaimLimit: 64, ClaimAhead: 128,
		BusyDelay: 5 * time.Millisecond, MaxPutOff: 30 * time.Second,
	})
	for i := range n {
		h.prepare("shared", fmt.Sprint("slow", i), slow.endpoint("http", "/cb"))
	}
	// Let the slow endpoint fill, so the bizID is capped at its room.
	require.Eventually(t, func() bool { return h.total("http", outcomeDeferred) > 0 }, 20*time.Second, time.Millisecond)
	for i := range 50 { // clientlib's test checker commits keys c...
		h.prepare("shared", fmt.Sprint("c", i), fast.endpoint("http", "/cb"))
	}
	waitCommitted(t, h, "shared", "c", 50)
	t.Logf("the other endpoint's 50 answered while the full one had served %d of %d", slowServed.Load(), n)
	// At 2 at a time and 20ms each the slow backlog takes 10s however
	// fast the machine: the fast endpoint's messages did not wait for it.
	require.Less(t, slowServed.Load(), int32(n/2), "the fast endpoint's check-backs waited behind the slow one's backlog")
	require.LessOrEqual(t, slowMax.Load(), int32(capacity))
}

// The endpoint cap shows in eventcenter_checkback_biz_throttled{limit=
// "endpoint"} while it holds, and the gauge is back to 0 once the
// endpoint's backlog is served.
func TestEndpointCapIsShownWhileItHolds(t *testing.T) {
	t.Parallel()
	p, _, _ := delayedProducer(t, 20*time.Millisecond)
	clk := newRealClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{p.endpoint("http", "")},
		Workers: 8, EndpointConcurrency: 1, EndpointQueue: 1,
		BusyDelay: 5 * time.Millisecond, MaxPutOff: time.Second,
	})
	held := func() float64 { return testutil.ToFloat64(h.v.m.bizHeld.WithLabelValues("other", limitEndpoint)) }
	for i := range 40 {
		h.prepare("held", fmt.Sprint("k", i), p.endpoint("http", "/cb"))
	}
	require.Eventually(t, func() bool { return held() == 1 }, 20*time.Second, time.Millisecond, "never shown held")
	waitCommitted(t, h, "held", "k", 40)
	require.Eventually(t, func() bool { return held() == 0 }, 20*time.Second, time.Millisecond, "still shown held after its backlog")
}
