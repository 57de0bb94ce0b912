package storemetrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeStore struct {
	counts []store.Count
	oldest map[string]time.Time
	err    error
}

func (f fakeStore) Counts(context.Context) ([]store.Count, error) { return f.counts, f.err }
func (f fakeStore) OldestPrepared(context.Context) (map[string]time.Time, error) {
	return f.oldest, f.err
}

func TestRefreshSetsGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := fakeStore{
		counts: []store.Count{
			{BizID: "orders", Status: state.Prepared, N: 3},
			{BizID: "orders", Status: state.Committed, SendStatus: state.SendDead, N: 2},
			{BizID: "orders", Status: state.Committed, SendStatus: state.SendPending, N: 5},
			{BizID: "x1", Status: state.VerifyFailed, N: 4},
			{BizID: "x2", Status: state.VerifyFailed, N: 1},
		},
		oldest: map[string]time.Time{"orders": now.Add(-90 * time.Second), "x1": now.Add(-10 * time.Second), "x2": now.Add(-20 * time.Second)},
	}
	reg := prometheus.NewRegistry()
	c := New(Config{BizIDs: []string{"orders"}, Now: func() time.Time { return now }, Registerer: reg}, st)
	require.NoError(t, c.Refresh(t.Context()))
	require.Equal(t, 2.0, testutil.ToFloat64(c.dead))
	require.Equal(t, 5.0, testutil.ToFloat64(c.verifyFailed))
	require.Equal(t, 5.0, testutil.ToFloat64(c.unsent))
	require.NoError(t, testutil.CollectAndCompare(c.oldest, strings.NewReader(`
# HELP eventcenter_oldest_prepared_age_seconds Age of the oldest PREPARED message per bizID.
# TYPE eventcenter_oldest_prepared_age_seconds gauge
eventcenter_oldest_prepared_age_seconds{biz_id="orders"} 90
eventcenter_oldest_prepared_age_seconds{biz_id="other"} 20
`)))
	require.Equal(t, 5.0, testutil.ToFloat64(c.messages.WithLabelValues("other", "VERIFY_FAILED", "-")), "unconfigured bizIDs share one label")
}

func TestConfiguredBizIDsHaveAnAgeOfZero(t *testing.T) {
	t.Parallel()
	c := New(Config{BizIDs: []string{"orders", "pay"}}, fakeStore{oldest: map[string]time.Time{}})
	require.NoError(t, c.Refresh(t.Context()))
	require.Equal(t, 2, testutil.CollectAndCount(c.oldest))
	require.Zero(t, testutil.ToFloat64(c.oldest.WithLabelValues("pay")))
}

func TestRefreshError(t *testing.T) {
	t.Parallel()
	c := New(Config{}, fakeStore{err: errors.New("db down")})
	require.ErrorContains(t, c.Refresh(t.Context()), "db down")
}
