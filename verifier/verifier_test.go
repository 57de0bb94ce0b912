package verifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// decideByKey is a producer's decision function: keys starting with c
// committed, r rolled back, anything else unknown.
func decideByKey(_ context.Context, _ string, key string) (clientlib.Decision, error) {
	switch {
	case strings.HasPrefix(key, "c"):
		return clientlib.DecisionCommit, nil
	case strings.HasPrefix(key, "r"):
		return clientlib.DecisionRollback, nil
	}
	return clientlib.DecisionUnknown, nil
}

// clientlibProducer is a producer served by clientlib's handler.
func clientlibProducer(t *testing.T, opts ...clientlib.CheckbackOption) *producer {
	t.Helper()
	h := clientlib.NewCheckbackHandler(decideByKey, opts...)
	return newProducer(t, h.ServeHTTP)
}

var testPolicy = Policy{BackoffBase: time.Second, BackoffCap: 4 * time.Second, Jitter: JitterNone, JitterSet: true}

// Every protocol, every decision, against clientlib's handler: the round
// trip through real HTTP, the store and the state machine.
func TestCheckbackRoundTrip(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy: testPolicy,
		BizIDs: map[string]BizConfig{"1001": {Allow: []string{p.endpoint("http", ""), p.endpoint("tri", ""), p.endpoint("jsonrpc", "")}}},
	})
	eps := map[string]string{
		"http":    p.endpoint("http", "/checkback"),
		"triple":  p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int"),
		"jsonrpc": p.endpoint("jsonrpc", "/com.example.TxChecker?bizid=int"),
	}
	t0 := clk.Now()
	for proto, ep := range eps {
		for _, d := range []string{"c", "r", "u"} {
			h.prepare("1001", d+"-"+proto, ep)
		}
	}
	var wantSent []string
	for proto := range eps {
		m := h.waitStatus("1001", "c-"+proto, state.Committed)
		require.Equal(t, state.SendPending, m.SendStatus)
		wantSent = append(wantSent, "1001:c-"+proto)
		h.waitStatus("1001", "r-"+proto, state.RolledBack)
		m = h.waitAttempts("1001", "u-"+proto, 1)
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, t0.Add(time.Second), m.VerifyNextAt, "first backoff is BackoffBase")
		require.Contains(t, m.LastError, "producer answered unknown")
		require.Equal(t, 1.0, h.total(proto, outcomeCommit), proto)
		require.Equal(t, 1.0, h.total(proto, outcomeRollback), proto)
		require.Equal(t, 1.0, h.total(proto, outcomeUnknown), proto)
		require.Equal(t, 0.0, h.total(proto, outcomeError), proto)
	}
	require.Eventually(t, func() bool { return len(h.fwd.keys()) == 3 }, 5*time.Second, time.Millisecond)
	require.ElementsMatch(t, wantSent, h.fwd.keys(), "commits are handed to the forwarder")
	for _, r := range p.requests() {
		if r.Method == http.MethodPost {
			require.Contains(t, r.Body, "[1001,", "bizid=int sends a number")
		} else {
			require.Contains(t, r.Target, "bizID=1001&messageKey=")
		}
	}
	n, err := testutil.GatherAndCount(h.reg, "eventcenter_checkback_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, len(checkback.Protocols), n, "one duration series per protocol (registry included)")
}

// The schedule follows the policy, then the last attempt parks the message
// as VERIFY_FAILED with the alert metric.
func TestBackoffScheduleThenVerifyFailed(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionUnknown))
	bad := newProducer(t, answering(503, "text/plain", "overloaded"))
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy: Policy{MaxAttempts: 2, BackoffBase: time.Second, BackoffCap: time.Second, Jitter: JitterNone},
		Allow:  []string{bad.endpoint("http", "")},
		BizIDs: map[string]BizConfig{"b1": {
			Policy: Policy{BackoffBase: time.Second, BackoffCap: 4 * time.Second, MaxAttempts: 5, Jitter: JitterNone, JitterSet: true},
			Allow:  []string{p.endpoint("http", "/cb")},
		}},
	})
	h.prepare("b1", "k", p.endpoint("http", "/cb"))
	h.prepare("unlisted", "k", bad.endpoint("http", "/cb"))

	wantDelays := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i, d := range wantDelays {
		m := h.waitAttempts("b1", "k", i+1)
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, clk.Now().Add(d), m.VerifyNextAt, "delay after attempt %d", i+1)
		require.Equal(t, 0.0, testutil.ToFloat64(h.v.m.verifyFailed.WithLabelValues("b1")))
		clk.Advance(d)
	}
	m := h.waitStatus("b1", "k", state.VerifyFailed)
	require.Equal(t, 5, m.VerifyAttempts)
	require.Contains(t, m.LastError, "check-back 5 via")
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.verifyFailed.WithLabelValues("b1")) == 1 },
		5*time.Second, time.Millisecond)
	var attempts []string
	for _, r := range p.requests() {
		attempts = append(attempts, r.Target[strings.Index(r.Target, "attempt="):][:9])
	}
	require.Equal(t, []string{"attempt=1", "attempt=2", "attempt=3", "attempt=4", "attempt=5"}, attempts)

	// A bizID without its own configuration: global policy, "other" label,
	// and a failing endpoint counts as an error.
	m = h.waitStatus("unlisted", "k", state.VerifyFailed)
	require.Equal(t, 2, m.VerifyAttempts)
	require.Contains(t, m.LastError, "HTTP 503")
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.verifyFailed.WithLabelValues("other")) == 1 },
		5*time.Second, time.Millisecond)
	require.Equal(t, 2.0, h.total("http", outcomeError))
	require.Equal(t, 5.0, h.total("http", outcomeUnknown))
}

// An endpoint the configuration does not allow is never called; the
// message is parked with the reason in its row.
func TestDisallowedEndpointNeverCalled(t *testing.T) {
	t.Parallel()
	evil := newProducer(t, replying(checkback.DecisionCommit))
	good := clientlibProducer(t)
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Allow: []string{"http://10.255.255.1:8080"},
		BizIDs: map[string]BizConfig{
			"b":      {Allow: []string{good.endpoint("http", "/cb/")}},
			"cfg":    {Endpoint: good.endpoint("http", "/cfg")},
			"forced": {Endpoint: good.endpoint("tri", "/a.B/verifyMessage"), ForceEndpoint: true},
		},
	})
	h.prepare("b", "c-evil", evil.endpoint("http", "/cb/x"))
	h.prepare("b", "c-prefix", good.endpoint("http", "/cbx"))
	h.prepare("other", "c-1", evil.endpoint("tri", "/a.B/verifyMessage"))
	h.prepare("b", "c-none", "")
	h.prepare("b", "c-bad", "gopher://x/y")
	h.prepare("b", "c-good", good.endpoint("http", "/cb/check"))
	h.prepare("cfg", "c-default", "")
	h.prepare("forced", "c-forced", evil.endpoint("http", "/x"))

	m := h.waitStatus("b", "c-evil", state.VerifyFailed)
	require.Contains(t, m.LastError, fmt.Sprintf("check-back endpoint %s is not allowed for bizID \"b\"", evil.endpoint("http", "/cb/x")))
	require.Equal(t, 0, m.VerifyAttempts)
	m = h.waitStatus("b", "c-prefix", state.VerifyFailed)
	require.Contains(t, m.LastError, "is not allowed")
	m = h.waitStatus("other", "c-1", state.VerifyFailed)
	require.Contains(t, m.LastError, "is not allowed for bizID \"other\"")
	m = h.waitStatus("b", "c-none", state.VerifyFailed)
	require.Contains(t, m.LastError, "no check-back endpoint")
	m = h.waitStatus("b", "c-bad", state.VerifyFailed)
	require.Contains(t, m.LastError, `unsupported scheme "gopher"`)

	h.waitStatus("b", "c-good", state.Committed)
	h.waitStatus("cfg", "c-default", state.Committed)
	h.waitStatus("forced", "c-forced", state.Committed)

	require.Empty(t, evil.requests(), "a disallowed endpoint is never called")
	require.Equal(t, 3.0, testutil.ToFloat64(h.v.m.disallowed))
	require.Equal(t, 2.0, h.total("http", outcomeParked))
	require.Equal(t, 1.0, h.total("triple", outcomeParked))
	require.Equal(t, 2.0, h.total("none", outcomeParked))
	var targets []string
	for _, r := range good.requests() {
		targets = append(targets, r.Method+" "+r.Target[:strings.IndexAny(r.Target+"?", "?")])
	}
	require.ElementsMatch(t, []string{"GET /cb/check", "GET /cfg", "POST /a.B/verifyMessage"}, targets)
}

// A hanging endpoint and a slow one hold only their own slots: checks of
// other bizIDs go through while the hanging calls still hang. The call
// timeout is an hour: were the fast checks queued behind the hanging
// endpoint, none would be done within the test.
func TestHangingAndSlowEndpointsDoNotDelayOthers(t *testing.T) {
	t.Parallel()
	var hangInFlight, hangMax atomic.Int32
	hang := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		n := hangInFlight.Add(1)
		defer hangInFlight.Add(-1)
		raiseTo(&hangMax, n)
		<-r.Context().Done()
	})
	slow := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		reply(w, r, checkback.DecisionCommit)
	})
	fast := clientlibProducer(t)
	clk := newRealClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Workers: 8, EndpointConcurrency: 2, EndpointQueue: 2, BusyDelay: 10 * time.Millisecond,
		Policy: Policy{Timeout: time.Hour}, Lease: 3 * time.Hour,
		Allow: []string{hang.endpoint("http", ""), slow.endpoint("http", ""), fast.endpoint("tri", "")},
	})
	for i := range 20 {
		h.prepare("hang", fmt.Sprint("c", i), hang.endpoint("http", "/cb"))
		h.prepare("slow", fmt.Sprint("c", i), slow.endpoint("http", "/cb"))
	}
	start := time.Now()
	for i := range 20 {
		h.prepare("fast", fmt.Sprint("c", i), fast.endpoint("tri", "/a.B/verifyMessage"))
	}
	for i := range 20 {
		h.waitStatus("fast", fmt.Sprint("c", i), state.Committed)
	}
	t.Logf("20 fast checks done in %s behind a hanging and a slow endpoint", time.Since(start))
	require.LessOrEqual(t, hangMax.Load(), int32(2), "hanging endpoint held to its cap")
	require.Equal(t, int32(2), hangInFlight.Load(), "done while the hanging calls still hang")
	require.Positive(t, h.total("http", outcomeDeferred), "the rest were put off, not waited for")
	m := h.get("hang", "c19")
	require.Equal(t, 0, m.VerifyAttempts, "put-offs burn no attempt")
}

// Stop cuts calls in flight short: their attempt stays counted (the
// producer may have seen the call) and they are checked again after their
// backoff; claimed messages not called yet (waiting behind the busy
// endpoint) are given back, due at once, without burning an attempt.
func TestStopCountsCallsCutShortAndGivesBackTheRest(t *testing.T) {
	t.Parallel()
	var got atomic.Int32
	hang := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		<-r.Context().Done()
	})
	clk := newClock()
	st := openSQLite(t, clk)
	h := startVerifier(t, clk, st, Config{Allow: []string{hang.endpoint("http", "")}, Workers: 4, EndpointConcurrency: 1,
		Policy: Policy{Timeout: 30 * time.Second, BackoffBase: time.Second, BackoffCap: time.Second, Jitter: JitterNone}})
	h.prepare("b", "k", hang.endpoint("http", "/"))
	require.Eventually(t, func() bool { return got.Load() == 1 }, 5*time.Second, time.Millisecond)
	h.prepare("b", "queued", hang.endpoint("http", "/"))
	h.waitFor("b", "queued", "claimed", func(m state.Message) bool { return m.LeaseToken != 0 })
	require.NoError(t, h.v.Stop(t.Context()))
	m := h.get("b", "k")
	require.Equal(t, state.Prepared, m.Status)
	require.Equal(t, 1, m.VerifyAttempts, "the call cut short counts")
	require.Equal(t, clk.Now().Add(time.Second), m.VerifyNextAt, "checked again after its backoff")
	require.Contains(t, m.LastError, "cut short")
	m = h.get("b", "queued")
	require.Equal(t, 0, m.VerifyAttempts, "not called: given back")
	require.Equal(t, clk.Now(), m.VerifyNextAt, "due at once for the next owner")
	require.Equal(t, int32(1), got.Load())
	require.NoError(t, h.v.Stop(t.Context()), "Stop twice")
	require.Error(t, h.v.Start(t.Context()), "no restart")
}

// The circuit opens after consecutive failures; while open, messages are
// put off without a call and without burning attempts; one probe after the
// cool-down closes it again.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	var calls atomic.Int32
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !healthy.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		reply(w, r, checkback.DecisionCommit)
	})
	// Wall clock (gobreaker): long enough to observe the open state on a
	// loaded CI machine under -race (2s was not).
	const coolDown = 8 * time.Second
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy:          testPolicy,
		Allow:           []string{p.endpoint("http", "")},
		BreakerFailures: 3, BreakerCoolDown: coolDown,
		Rand: func() float64 { return 0.5 },
	})
	for i := range 3 {
		h.prepare("b", fmt.Sprint("a", i), p.endpoint("http", "/"))
	}
	for i := range 3 {
		h.waitAttempts("b", fmt.Sprint("a", i), 1)
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.circuitOpen) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(3), calls.Load())

	for i := range 5 {
		h.prepare("b", fmt.Sprint("d", i), p.endpoint("http", "/"))
	}
	for i := range 5 {
		m := h.waitFor("b", fmt.Sprint("d", i), "put off by the cool-down", func(m state.Message) bool {
			return m.VerifyNextAt.Equal(clk.Now().Add(coolDown + coolDown/4)) // cool-down + Rand·cool-down/2
		})
		require.Equal(t, 0, m.VerifyAttempts)
		require.Equal(t, state.Prepared, m.Status)
	}
	require.Equal(t, int32(3), calls.Load(), "no call while open")
	require.GreaterOrEqual(t, h.total("http", outcomeDeferred), 5.0)

	// After the cool-down (wall clock) the breaker lets one probe through.
	healthy.Store(true)
	g := h.v.gates.get(strings.TrimPrefix(p.srv.URL, "http://"))
	require.Eventually(t, func() bool { return g.breaker.State().String() == "half-open" }, 2*coolDown, time.Millisecond)
	require.Eventually(t, func() bool {
		clk.Advance(time.Second)
		for _, k := range []string{"a0", "a1", "a2", "d0", "d1", "d2", "d3", "d4"} {
			if m, _ := h.st.Get(context.Background(), "b", k); m.Status != state.Committed {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 0.0, testutil.ToFloat64(h.v.m.circuitOpen))
	require.Equal(t, int32(3+8), calls.Load(), "each message called once after the probe")
	for _, k := range []string{"d0", "d1", "d2", "d3", "d4"} {
		require.Equal(t, 1, h.get("b", k).VerifyAttempts, "the one call; the put-offs gave theirs back")
	}
}

// Signed requests pass clientlib's check; a wrong secret is refused and
// read as unknown.
func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	clk := newClock()
	p := clientlibProducer(t, clientlib.WithSecret("s3cret"), clientlib.WithCheckbackClock(clk.Now))
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy: testPolicy,
		BizIDs: map[string]BizConfig{
			"good":  {Allow: []string{p.endpoint("http", ""), p.endpoint("tri", ""), p.endpoint("jsonrpc", "")}, Secret: "s3cret"},
			"wrong": {Allow: []string{p.endpoint("http", "")}, Secret: "guess"},
			"none":  {Allow: []string{p.endpoint("http", "")}},
			// The transition switch: v1 is added, the v2 handler reads v2.
			"legacy": {Allow: []string{p.endpoint("tri", "")}, Secret: "s3cret", SignV1: true},
		},
	})
	h.prepare("legacy", "c-tri", p.endpoint("tri", "/a.B/verifyMessage?version=1&group=g"))
	h.prepare("good", "c-http", p.endpoint("http", "/cb"))
	h.prepare("good", "c-tri", p.endpoint("tri", "/a.B/verifyMessage"))
	h.prepare("good", "c-rpc", p.endpoint("jsonrpc", "/a.B"))
	h.prepare("wrong", "c-1", p.endpoint("http", "/cb"))
	h.prepare("none", "c-1", p.endpoint("http", "/cb"))
	for _, k := range []string{"c-http", "c-tri", "c-rpc"} {
		h.waitStatus("good", k, state.Committed)
	}
	h.waitStatus("legacy", "c-tri", state.Committed)
	m := h.waitAttempts("wrong", "c-1", 1)
	require.Equal(t, state.Prepared, m.Status)
	require.Contains(t, m.LastError, "HTTP 401")
	m = h.waitAttempts("none", "c-1", 1)
	require.Contains(t, m.LastError, "HTTP 401")
	for _, r := range p.requests() {
		switch {
		case strings.Contains(r.Target, "bizID=none"):
			require.Empty(t, r.Header.Get(checkback.SignatureHeader))
		case r.Header.Get("tri-service-group") == "g":
			require.Regexp(t, `^t=\d+,v2=[0-9a-f]{64},v1=[0-9a-f]{64}$`, r.Header.Get(checkback.SignatureHeader))
		default:
			require.Regexp(t, `^t=\d+,v2=[0-9a-f]{64}$`, r.Header.Get(checkback.SignatureHeader))
		}
	}
}

// Partitions not owned are left alone; an assignment wakes the loop at once.
func TestOwnershipWakesTheLoop(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")}, PollInterval: time.Hour})
	h.prepareIn(3, "b", "c-1", p.endpoint("http", "/"))
	h.prepareIn(0, "b", "c-0", p.endpoint("http", "/"))
	// The verifier's first claim may have run before these prepares, and
	// the next poll is an hour away: an ownership change wakes it.
	h.owned.Assign(0)
	require.Eventually(t, func() bool { return st.claimCount() >= 1 }, 5*time.Second, time.Millisecond)
	h.waitStatus("b", "c-0", state.Committed)
	require.Equal(t, state.Prepared, h.get("b", "c-1").Status, "partition 3 is not owned")
	h.owned.Assign(3)
	start := time.Now()
	h.waitStatus("b", "c-1", state.Committed)
	require.Less(t, time.Since(start), 5*time.Second, "woken by the assignment, not the hourly poll")
	require.Len(t, p.requests(), 2)
}

// failingApply refuses the next fail writes of check-back results (the
// test's own writes, the PREPAREs, go through).
type failingApply struct {
	testStore
	fail atomic.Int32
}

func (f *failingApply) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if len(req.Changes) > 0 && req.Changes[0].Event.Kind != state.KindPrepare && f.fail.Add(-1) >= 0 {
		return store.ApplyResult{}, errors.New("database is locked")
	}
	return f.testStore.Apply(ctx, req)
}

// An answer the store refuses is written again while its lease lasts: a
// short store outage (a failover, a lost connection) costs no second call.
func TestApplyFailureWrittenAgainWithinLease(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newClock()
	st := &failingApply{testStore: openSQLite(t, clk)}
	st.fail.Store(3)
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")}, Lease: 20 * time.Second, Policy: Policy{Timeout: time.Second}})
	h.prepare("b", "c-1", p.endpoint("http", "/"))
	// The clock stands still: the lease never runs out, so only a write
	// made again brings the answer in.
	h.waitStatus("b", "c-1", state.Committed)
	require.Len(t, p.requests(), 1, "the producer was asked once")
	require.Equal(t, 3.0, testutil.ToFloat64(h.v.m.applyErrors))
	require.Zero(t, testutil.ToFloat64(h.v.m.applyAbandoned))
}

// An answer the store refuses until its lease runs out is given up; the
// message is checked again by the next claim.
func TestApplyFailureChecksAgainAfterLease(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newClock()
	st := &failingApply{testStore: openSQLite(t, clk)}
	st.fail.Store(1 << 30)
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")}, Lease: 20 * time.Second, Policy: Policy{Timeout: time.Second}})
	h.prepare("b", "c-1", p.endpoint("http", "/"))
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.applyErrors) >= 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, state.Prepared, h.get("b", "c-1").Status)
	clk.Advance(20 * time.Second)
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.applyAbandoned) == 1 }, 10*time.Second, time.Millisecond)
	st.fail.Store(0)
	h.waitStatus("b", "c-1", state.Committed)
	require.Len(t, p.requests(), 2)
}

// A late answer for a claim that was taken over is dropped (lease token).
func TestStaleAnswerDropped(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var calls atomic.Int32
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			reply(w, r, checkback.DecisionRollback) // the stale claim says rollback
			return
		}
		reply(w, r, checkback.DecisionCommit)
	})
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{Allow: []string{p.endpoint("http", "")}, Lease: 30 * time.Second, Policy: Policy{Timeout: 10 * time.Second}})
	h.prepare("b", "k", p.endpoint("http", "/"))
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	clk.Advance(31 * time.Second) // lease expired: the message is claimed again
	h.waitStatus("b", "k", state.Committed)
	close(release)
	require.Eventually(t, func() bool { return h.total("http", outcomeRollback) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, h.v.Stop(t.Context()))
	require.Equal(t, state.Committed, h.get("b", "k").Status, "the stale rollback was dropped")
}

// A message that waited in an endpoint's queue so long that its lease could
// run out is not called; it is given back (no attempt burned, due at once)
// to the next claim.
func TestQueuedPastLeaseIsGivenBackToNextClaim(t *testing.T) {
	t.Parallel()
	p, release, calls := firstCallWaits(t)
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Allow: []string{p.endpoint("http", "")}, Workers: 4, EndpointConcurrency: 1, EndpointQueue: 1,
		Lease: 30 * time.Second, Policy: Policy{Timeout: 10 * time.Second},
	})
	h.prepare("b", "first", p.endpoint("http", "/"))
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	h.prepare("b", "second", p.endpoint("http", "/"))
	require.Eventually(t, func() bool {
		g := h.v.gates.get(strings.TrimPrefix(p.srv.URL, "http://"))
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 1
	}, 5*time.Second, time.Millisecond, "second waits in the queue")
	clk.Advance(11 * time.Second) // past Lease - 2×Timeout
	close(release)
	h.waitStatus("b", "first", state.Committed)
	// Given back and claimed again at once (the clock does not move).
	m := h.waitStatus("b", "second", state.Committed)
	require.Equal(t, int32(2), calls.Load(), "the queued claim made no call; the next claim's did")
	require.Equal(t, 1.0, h.total("http", outcomeDeferred), "given back once")
	require.Equal(t, 1, m.VerifyAttempts, "the given-back claim burned nothing")
}

// Claims whose calls were never answered (their center was killed during
// the call) count: the next claim is the next attempt, and a claim past
// the limit makes no call and parks the message with the limit recorded.
// The producer never sees more calls for a message than the limit.
func TestLostClaimsKeepCallsWithinTheLimit(t *testing.T) {
	t.Parallel()
	var calls callCounter
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.add(r.URL.Query().Get("messageKey"))
		_, _ = w.Write([]byte("1")) // unknown
	})
	clk := newClock()
	st := openSQLite(t, clk)
	// A center killed during its calls: it claims, calls (the producer
	// counts them here) and never records an answer.
	lost := func(lease time.Duration, key string) {
		t.Helper()
		got, err := st.ClaimCheckbacks(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: lease})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, key, got[0].Key)
		calls.add(key)
	}
	prepareAll(t, st, clk.Now(), p.endpoint("http", "/cb"), "two-lost")
	lost(time.Minute, "two-lost")
	clk.Advance(time.Minute)
	lost(10*time.Minute, "two-lost")
	prepareAll(t, st, clk.Now(), p.endpoint("http", "/cb"), "one-lost")
	lost(time.Minute, "one-lost")
	clk.Advance(10 * time.Minute) // every lease ran out
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")},
		Policy: Policy{MaxAttempts: 2, BackoffBase: time.Second, BackoffCap: time.Second, Jitter: JitterNone}})

	m := h.waitStatus("b", "one-lost", state.VerifyFailed)
	require.Equal(t, 2, m.VerifyAttempts)
	require.Contains(t, m.LastError, "check-back 2 via")
	require.Equal(t, 2, calls.get("one-lost"), "the second attempt was the last call")

	m = h.waitStatus("b", "two-lost", state.VerifyFailed)
	require.Equal(t, 2, m.VerifyAttempts, "the limit recorded, not the claim past it")
	require.Contains(t, m.LastError, "check-back 2 via "+p.endpoint("http", "/cb")+" was never answered")
	require.Equal(t, 2, calls.get("two-lost"), "no call past the limit")
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.verifyFailed.WithLabelValues("other")) == 2 },
		5*time.Second, time.Millisecond, "both alert")
	require.Equal(t, 1.0, h.total("http", outcomeParked))
}
