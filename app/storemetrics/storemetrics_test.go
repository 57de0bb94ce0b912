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
	counts  []store.Count
	oldest  map[string]time.Time
	orphans map[string]store.OrphanStat
	err     error
}

func (f fakeStore) Counts(context.Context) ([]store.Count, error) { return f.counts, f.err }
func (f fakeStore) OldestPrepared(context.Context) (map[string]time.Time, error) {
	return f.oldest, f.err
}

func (f fakeStore) OrphanCommits(context.Context) (map[string]store.OrphanStat, error) {
	return f.orphans, f.err
}

func TestRefreshSetsGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := fakeStore{
		counts: []store.Count{
			{BizID: "orders", Status: state.Prepared, N: 3},
			{BizID: "orders", Status: state.Committed, SendStatus: state.SendDead, N: 2},
			{BizID: "orders", Status: state.Committed, SendStatus: state.SendPending, N: 5},
			{BizID: "later", Status: state.Committed, SendStatus: state.SendPending, N: 7, Scheduled: 6},
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
	require.Equal(t, 6.0, testutil.ToFloat64(c.unsent), "5 + the one of later's 7 that is due")
	require.Equal(t, 6.0, testutil.ToFloat64(c.scheduled))
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

func TestOrphanCommitGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := fakeStore{orphans: map[string]store.OrphanStat{
		"orders": {N: 2, Oldest: now.Add(-15 * time.Minute)},
		"x1":     {N: 3, Oldest: now.Add(-time.Minute)},
		"x2":     {N: 1, Oldest: now.Add(-2 * time.Minute)},
	}}
	reg := prometheus.NewRegistry()
	c := New(Config{BizIDs: []string{"orders", "pay"}, Now: func() time.Time { return now }, Registerer: reg}, st)
	require.NoError(t, c.Refresh(t.Context()))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP eventcenter_oldest_orphan_commit_age_seconds Age of the oldest orphan COMMIT (committed without a body) per bizID.
# TYPE eventcenter_oldest_orphan_commit_age_seconds gauge
eventcenter_oldest_orphan_commit_age_seconds{biz_id="orders"} 900
eventcenter_oldest_orphan_commit_age_seconds{biz_id="other"} 120
eventcenter_oldest_orphan_commit_age_seconds{biz_id="pay"} 0
# HELP eventcenter_orphan_commits Orphan COMMITs: committed messages without a body (their PREPARE was dead-lettered or never came), which cannot be forwarded.
# TYPE eventcenter_orphan_commits gauge
eventcenter_orphan_commits 6
`), "eventcenter_orphan_commits", "eventcenter_oldest_orphan_commit_age_seconds"))

	// All resolved: the count drops to 0, configured bizIDs keep a 0 age.
	c.st = fakeStore{orphans: map[string]store.OrphanStat{}}
	require.NoError(t, c.Refresh(t.Context()))
	require.Zero(t, testutil.ToFloat64(c.orphans))
	require.Equal(t, 2, testutil.CollectAndCount(c.oldestOrphan))
	require.Zero(t, testutil.ToFloat64(c.oldestOrphan.WithLabelValues("orders")))
}

func TestRefreshError(t *testing.T) {
	t.Parallel()
	c := New(Config{}, fakeStore{err: errors.New("db down")})
	require.ErrorContains(t, c.Refresh(t.Context()), "db down")
}

// orderStore is a fakeStore that keeps per-key order.
type orderStore struct {
	fakeStore
	blocked []store.BlockedKey
	err     error
}

func (o orderStore) BlockedKeys(context.Context, string, int) ([]store.BlockedKey, error) {
	return o.blocked, o.err
}

func TestBlockedOrderKeyGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := orderStore{blocked: []store.BlockedKey{
		{OrderRef: store.OrderRef{BizID: "orders", OrderKey: "o-1"}, Since: now.Add(-5 * time.Minute)},
		{OrderRef: store.OrderRef{BizID: "orders", OrderKey: "o-2"}, Since: now.Add(-time.Minute)},
		{OrderRef: store.OrderRef{BizID: "x1", OrderKey: "o-1"}, Since: now.Add(-30 * time.Second)},
	}}
	c := New(Config{BizIDs: []string{"orders", "idle"}, Now: func() time.Time { return now }, Registerer: prometheus.NewRegistry()}, st)
	require.NoError(t, c.Refresh(t.Context()))
	require.Equal(t, 3.0, testutil.ToFloat64(c.blocked))
	require.NoError(t, testutil.CollectAndCompare(c.oldestBlock, strings.NewReader(`
# HELP eventcenter_oldest_blocked_order_key_age_seconds Seconds since the head of the oldest blocked order key was committed, per bizID (0: none blocked).
# TYPE eventcenter_oldest_blocked_order_key_age_seconds gauge
eventcenter_oldest_blocked_order_key_age_seconds{biz_id="idle"} 0
eventcenter_oldest_blocked_order_key_age_seconds{biz_id="orders"} 300
eventcenter_oldest_blocked_order_key_age_seconds{biz_id="other"} 30
`)))

	// A store that cannot keep order leaves the gauges at 0; another error fails the refresh.
	st.err = store.ErrOrderUnavailable
	c = New(Config{Now: func() time.Time { return now }}, st)
	require.NoError(t, c.Refresh(t.Context()))
	st.err = errors.New("db down")
	c = New(Config{Now: func() time.Time { return now }}, st)
	require.ErrorContains(t, c.Refresh(t.Context()), "db down")
}
