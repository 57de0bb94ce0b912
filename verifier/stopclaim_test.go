package verifier

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// claimAcrossStop is a store whose first claim that leases something
// commits its lease and then waits until the test stops the verifier.
// Like a claim statement that committed on the server just as its caller's
// context was cancelled, it then returns the context's error if that
// context ends within a moment, and what it leased otherwise.
type claimAcrossStop struct {
	testStore
	leased   chan struct{} // closed once the claim holds its lease
	stopping chan struct{} // closed by the test just before Stop
	once     sync.Once
}

func (s *claimAcrossStop) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	msgs, err := s.testStore.ClaimCheckbacks(context.WithoutCancel(ctx), c)
	if err != nil || len(msgs) == 0 {
		return msgs, err
	}
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return msgs, nil
	}
	close(s.leased)
	<-s.stopping
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("claim checkbacks: %w", ctx.Err())
	case <-time.After(500 * time.Millisecond):
		return msgs, nil
	}
}

// A claim in flight when the verifier stops is not cut short: what it
// leased is given back, due at once for the next owner and with its
// attempt given back, instead of staying leased for the whole check-back
// lease (two minutes by default) after a graceful stop.
func TestStopGivesBackWhatAClaimInFlightLeased(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newClock()
	st := &claimAcrossStop{testStore: openSQLite(t, clk), leased: make(chan struct{}), stopping: make(chan struct{})}
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")}, Lease: 2 * time.Minute})
	h.prepare("b", "c-1", p.endpoint("http", "/"))
	<-st.leased
	require.Equal(t, clk.Now().Add(2*time.Minute), h.get("b", "c-1").VerifyNextAt, "leased by the claim in flight")
	close(st.stopping)
	require.NoError(t, h.v.Stop(t.Context()))
	m := h.get("b", "c-1")
	require.Equal(t, state.Prepared, m.Status)
	require.Equal(t, clk.Now(), m.VerifyNextAt, "given back: due at once, not after the lease")
	require.Equal(t, 0, m.VerifyAttempts, "the claim's attempt given back: no call was made")
	require.Empty(t, p.requests())
}
