package verifier

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// claimLog records the limit of every claim a store was asked for.
type claimLog struct {
	testStore
	mu     sync.Mutex
	limits []int
}

func (c *claimLog) ClaimCheckbacks(ctx context.Context, cl store.Claim) ([]state.Message, error) {
	c.mu.Lock()
	c.limits = append(c.limits, cl.Limit)
	c.mu.Unlock()
	return c.testStore.ClaimCheckbacks(ctx, cl)
}

func (c *claimLog) maxLimit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, l := range c.limits {
		m = max(m, l)
	}
	return m
}

// Far more messages are due than there are workers: the claimed ones wait
// in the claim-ahead buffer instead of being put off, every message is
// called exactly once (no second call within its lease), and no claim asks
// for more than the free workers plus the buffer's room.
func TestClaimAheadNeverPutsOffForBusyWorkers(t *testing.T) {
	t.Parallel()
	const n, workers = 1000, 4
	var mu sync.Mutex
	calls := map[string]int{}
	var inFlight, maxInFlight atomic.Int32
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		raiseTo(&maxInFlight, cur)
		mu.Lock()
		calls[r.URL.Query().Get("messageKey")]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		reply(w, r, checkback.DecisionCommit)
	})
	clk := newRealClock()
	st := &claimLog{testStore: newMemStore(clk.Now)}
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{p.endpoint("http", "")},
		Workers: workers, EndpointConcurrency: workers, EndpointQueue: 8,
		ClaimLimit: 64, ClaimAhead: 20,
	})
	for i := range n {
		h.prepare("b", fmt.Sprint("c", i), p.endpoint("http", "/cb"))
	}
	require.Eventually(t, func() bool { return h.fwd.count() == n }, time.Minute, 5*time.Millisecond)
	require.Zero(t, h.total("http", outcomeDeferred), "nothing put off because the workers were busy")
	require.LessOrEqual(t, maxInFlight.Load(), int32(workers))
	require.LessOrEqual(t, st.maxLimit(), workers+20, "claims sized by free workers + buffer room")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, n)
	for k, c := range calls {
		require.Equal(t, 1, c, "%s called once", k)
	}
}

// A message that waited in the claim-ahead buffer so long that its lease
// could run out is not called; it is given back (no attempt burned, due at
// once) to the next claim.
func TestBufferedPastLeaseIsGivenBackToNextClaim(t *testing.T) {
	t.Parallel()
	p, release, calls := firstCallWaits(t)
	clk := newClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{
		Allow: []string{p.endpoint("http", "")}, Workers: 1, EndpointConcurrency: 1,
		Lease: 30 * time.Second, Policy: Policy{Timeout: 10 * time.Second},
	})
	h.prepare("b", "first", p.endpoint("http", "/"))
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	h.prepare("b", "second", p.endpoint("http", "/"))
	// Claimed (leased) while the only worker is busy: it waits in the buffer.
	h.waitFor("b", "second", "claimed", func(m state.Message) bool { return m.LeaseToken != 0 })
	clk.Advance(11 * time.Second) // past Lease - 2×Timeout
	close(release)
	h.waitStatus("b", "first", state.Committed)
	// Given back and claimed again at once (the clock does not move): the
	// second claim's call is the only one.
	m := h.waitStatus("b", "second", state.Committed)
	require.Equal(t, int32(2), calls.Load())
	require.Equal(t, 1.0, h.total("http", outcomeDeferred), "given back once")
	require.Equal(t, 1, m.VerifyAttempts, "the one call; the given-back claim burned nothing")
	require.GreaterOrEqual(t, st.claimCount(), 2)
}

// slowApply makes every Apply take a while and records how many run at once.
type slowApply struct {
	testStore
	delay       time.Duration
	running     atomic.Int32
	maxRunning  atomic.Int32
	applied     atomic.Int32 // commit answers in the batches that were written
	batchesDone atomic.Int32
}

func (s *slowApply) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	cur := s.running.Add(1)
	defer s.running.Add(-1)
	raiseTo(&s.maxRunning, cur)
	time.Sleep(s.delay)
	res, err := s.testStore.Apply(ctx, req)
	if err == nil {
		for _, c := range req.Changes {
			if c.Event.Kind == state.KindCheckCommit {
				s.applied.Add(1)
			}
		}
		s.batchesDone.Add(1)
	}
	return res, err
}

// Answers are written by several appliers at once, and Stop, arriving
// while batches are being written and others wait, writes every answer
// already received before it returns.
func TestConcurrentAppliersFlushOnStop(t *testing.T) {
	t.Parallel()
	const n, appliers = 2000, 3
	p := clientlibProducer(t)
	clk := newRealClock()
	mem := newMemStore(clk.Now)
	st := &slowApply{testStore: mem, delay: 20 * time.Millisecond}
	h := startVerifier(t, clk, st, Config{
		Allow: []string{p.endpoint("http", "")}, Appliers: appliers, ApplyBatch: 8, ApplyInterval: time.Millisecond,
		Workers: 16, EndpointConcurrency: 16,
	})
	// Prepared straight in the store, in one batch (not slowed down).
	prepares := make([]store.Change, n)
	for i := range prepares {
		prepares[i] = store.Change{BizID: "b", Key: fmt.Sprint("c", i), Event: state.Event{Kind: state.KindPrepare, At: clk.Now(),
			Body: &state.Body{Payload: []byte("payload"), Topic: "orders", Verify: p.endpoint("http", "/cb")}}}
	}
	_, err := mem.Apply(context.Background(), store.ApplyRequest{Changes: prepares})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return st.batchesDone.Load() >= 10 }, 30*time.Second, time.Millisecond)
	require.NoError(t, h.v.Stop(context.Background()))
	answered := int(h.total("http", outcomeCommit))
	require.Less(t, answered, n, "stopped while answers were still coming in")
	require.Equal(t, answered, int(st.applied.Load()), "every answer received was written")
	require.Equal(t, int32(appliers), st.maxRunning.Load(), "the appliers wrote at once")
	require.Zero(t, st.running.Load(), "no write runs after Stop")
	committed := 0
	counts, err := mem.Counts(context.Background())
	require.NoError(t, err)
	for _, c := range counts {
		if c.Status == state.Committed {
			committed += int(c.N)
		}
	}
	require.Equal(t, answered, committed)
	require.Equal(t, answered, h.fwd.count(), "and handed to the forwarder")
}

// firstCallWaits is a producer answering commit ("2") to every call, the
// first one only once release is closed; calls counts the calls.
func firstCallWaits(t *testing.T) (p *producer, release chan struct{}, calls *atomic.Int32) {
	t.Helper()
	release, calls = make(chan struct{}), new(atomic.Int32)
	p = newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		reply(w, r, checkback.DecisionCommit)
	})
	return p, release, calls
}

// raiseTo sets hi to v if v is larger (safe for concurrent use).
func raiseTo(hi *atomic.Int32, v int32) {
	for {
		if m := hi.Load(); v <= m || hi.CompareAndSwap(m, v) {
			return
		}
	}
}
