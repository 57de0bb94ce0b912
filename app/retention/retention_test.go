package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/startstop"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeStore struct {
	left   int
	calls  []int
	before []time.Time
	err    error

	auditLeft   int
	auditCalls  []int
	auditBefore []time.Time
}

func (f *fakeStore) PurgeAudit(_ context.Context, before time.Time, limit int) (int, error) {
	f.auditCalls = append(f.auditCalls, limit)
	f.auditBefore = append(f.auditBefore, before)
	n := min(limit, f.auditLeft)
	f.auditLeft -= n
	return n, nil
}

// TestAuditHasItsOwnPeriod: audit records are purged on their own, longer
// period; a zero period keeps them.
func TestAuditHasItsOwnPeriod(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{left: 3, auditLeft: 700}
	reg := prometheus.NewRegistry()
	p := New(Config{Period: 24 * time.Hour, AuditPeriod: 365 * 24 * time.Hour, Batch: 500, Now: func() time.Time { return now }, Registerer: reg}, st)
	p.Round(t.Context())
	require.Equal(t, now.Add(-24*time.Hour), st.before[0])
	require.Equal(t, []time.Time{now.Add(-365 * 24 * time.Hour), now.Add(-365 * 24 * time.Hour)}, st.auditBefore)
	require.Equal(t, 700.0, testutil.ToFloat64(p.auditPurged))
	require.Equal(t, 3.0, testutil.ToFloat64(p.purged))

	st = &fakeStore{auditLeft: 5}
	New(Config{Period: time.Hour}, st).Round(t.Context())
	require.Empty(t, st.auditCalls, "audit_period 0 keeps audit records")
}

func (f *fakeStore) Purge(_ context.Context, before time.Time, limit int) (int, error) {
	f.calls = append(f.calls, limit)
	f.before = append(f.before, before)
	if f.err != nil {
		return 0, f.err
	}
	n := min(limit, f.left)
	f.left -= n
	return n, nil
}

func TestRoundPurgesInBatchesUntilDone(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{left: 1234}
	reg := prometheus.NewRegistry()
	p := New(Config{Period: 24 * time.Hour, Batch: 500, Now: func() time.Time { return now }, Registerer: reg}, st)
	n, err := p.round(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1234, n)
	require.Equal(t, []int{500, 500, 500}, st.calls, "small batches, stop at a short one")
	require.Equal(t, now.Add(-24*time.Hour), st.before[0])
	require.Equal(t, 1234.0, testutil.ToFloat64(p.purged))
}

func TestZeroPeriodKeepsEverything(t *testing.T) {
	t.Parallel()
	st := &fakeStore{left: 10}
	n, err := New(Config{}, st).round(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, st.calls)
}

func TestStoreErrorStopsTheRound(t *testing.T) {
	t.Parallel()
	st := &fakeStore{left: 10, err: errors.New("db down")}
	_, err := New(Config{Period: time.Hour}, st).round(t.Context())
	require.ErrorContains(t, err, "db down")
	require.Len(t, st.calls, 1)
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	p := New(Config{Period: time.Hour, Interval: time.Hour}, st)
	require.NoError(t, p.Start(t.Context()))
	require.NoError(t, p.Start(t.Context()), "Start while started is a no-op (internal/startstop)")
	require.NoError(t, p.Stop(t.Context()))
	require.ErrorIs(t, p.Start(t.Context()), startstop.ErrStopped)
}
