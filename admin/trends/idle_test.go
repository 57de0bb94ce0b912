package trends

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
)

type noCounts struct{}

func (noCounts) Counts(context.Context) ([]store.Count, error) { return nil, nil }

// 300 one-off bizIDs forwarding once are counted in the next sample and
// then forgotten: the sampler keeps per-bizID counts for one interval
// only, not for every bizID ever seen.
func TestOneOffBizIDsAreForgotten(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := New(Config{Interval: 5 * time.Second, Now: func() time.Time { return now }}, noCounts{})
	require.NoError(t, s.Sample(t.Context()))
	for i := range 300 {
		s.Forwarded(fmt.Sprintf("once-%03d", i), 1)
	}
	now = now.Add(5 * time.Second)
	require.NoError(t, s.Sample(t.Context()))
	smps := s.Samples()
	require.InDelta(t, 60.0, smps[len(smps)-1].Total.Forwarded, 1e-9, "300 in 5s")
	require.Len(t, smps[len(smps)-1].ByBizID, MaxBizIDs, "folded to the busiest")
	now = now.Add(5 * time.Second)
	require.NoError(t, s.Sample(t.Context()))
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Empty(t, s.fwd, "nothing kept of bizIDs that forwarded nothing since")
}
