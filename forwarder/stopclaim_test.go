package forwarder_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// claimAcrossStop is a store whose first scan claim that leases something
// commits its lease and then waits until the test stops the forwarder.
// Like a claim statement that committed on the server just as its caller's
// context was cancelled, it then returns the context's error if that
// context ends within a moment, and what it leased otherwise.
type claimAcrossStop struct {
	forwarder.Store
	leased   chan struct{} // closed once the claim holds its lease
	stopping chan struct{} // closed by the test just before Stop
	once     sync.Once
}

func (s *claimAcrossStop) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	msgs, err := s.Store.ClaimSends(context.WithoutCancel(ctx), c)
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
		return nil, fmt.Errorf("claim sends: %w", ctx.Err())
	case <-time.After(500 * time.Millisecond):
		return msgs, nil
	}
}

// A scan claim in flight when the forwarder stops is not cut short: what
// it leased is released, due at once for the partition's next owner,
// instead of staying leased for the whole send lease.
func TestStopReleasesWhatAClaimInFlightLeased(t *testing.T) {
	t.Parallel()
	var st *claimAcrossStop
	h := newHarnessWith(t, nil, func(s forwarder.Store) forwarder.Store {
		st = &claimAcrossStop{Store: s, leased: make(chan struct{}), stopping: make(chan struct{})}
		return st
	})
	m := h.commit(t, 1, 0, "main", 0)[0] // not leased: left to the scan
	<-st.leased
	require.Equal(t, h.clock.Now().Add(testLease), h.get(t, m).SendNextAt, "leased by the scan's claim")
	close(st.stopping)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.f.Stop(ctx))
	got := h.get(t, m)
	require.Equal(t, state.SendPending, got.SendStatus)
	require.Equal(t, h.clock.Now(), got.SendNextAt, "released: due at once, not after the lease")
	require.Empty(t, h.targets["main"].sentIDs())
}
