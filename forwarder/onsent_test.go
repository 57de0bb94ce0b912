package forwarder_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

type sentCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *sentCounter) add(bizID string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[bizID] += n
}

func (c *sentCounter) get(bizID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[bizID]
}

// OnSent counts what the sent-marks wrote, per bizID, once.
func TestOnSentCountsMarkedMessages(t *testing.T) {
	t.Parallel()
	sc := &sentCounter{n: map[string]int{}}
	h := newHarness(t, func(c *forwarder.Config) {
		c.ScanInterval = time.Hour
		c.MarkInterval = 10 * time.Millisecond
		c.OnSent = sc.add
	})
	msgs := h.commit(t, 40, 0, "", testLease)
	h.f.Handoff(msgs)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 40 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return sc.get("shop") == 40 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // more marks would come now
	require.Equal(t, 40, sc.get("shop"))
}

// OnSent counts the inline sends too.
func TestOnSentCountsInlineSends(t *testing.T) {
	t.Parallel()
	sc := &sentCounter{n: map[string]int{}}
	h := newHarness(t, func(c *forwarder.Config) { c.OnSent = sc.add })
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k1", "k2")})
	require.NoError(t, err)
	require.Len(t, res.Forwarded, 2)
	require.Equal(t, 2, sc.get("b"))
}
