package trends_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/admin/trends"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeStore struct {
	counts []store.Count
	err    error
	calls  int
}

func (f *fakeStore) Counts(context.Context) ([]store.Count, error) {
	f.calls++
	return f.counts, f.err
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func pending(biz string, n int64, oldest time.Time) store.Count {
	return store.Count{BizID: biz, Status: state.Committed, SendStatus: state.SendPending, N: n, Oldest: oldest}
}

func TestSampleBacklogOldestAndRate(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	st := &fakeStore{counts: []store.Count{
		pending("orders", 3, c.t.Add(-30*time.Second)),
		pending("pay", 2, c.t.Add(-90*time.Second)),
		{BizID: "orders", Status: state.Committed, SendStatus: state.SendSent, N: 100, Oldest: c.t.Add(-time.Hour)},
		{BizID: "ship", Status: state.Prepared, N: 7, Oldest: c.t.Add(-2 * time.Hour)},
	}}
	s := trends.New(trends.Config{Interval: 5 * time.Second, Now: c.now}, st)
	s.Forwarded("orders", 40) // before the first sample: no rate yet
	require.NoError(t, s.Sample(t.Context()))
	s.Forwarded("orders", 50)
	s.Forwarded("pay", 5)
	c.add(5 * time.Second)
	require.NoError(t, s.Sample(t.Context()))
	require.Equal(t, 2, st.calls, "one query per sample")

	ss := s.Samples()
	require.Len(t, ss, 2)
	first, last := ss[0], ss[1]
	require.Zero(t, first.Total.Forwarded)
	require.Equal(t, trends.Value{Backlog: 3, OldestUnsent: 30 * time.Second}, first.ByBizID["orders"])
	require.Equal(t, int64(5), first.Total.Backlog)
	require.Equal(t, 90*time.Second, first.Total.OldestUnsent)
	require.Equal(t, trends.Value{}, first.ByBizID["ship"], "PREPARED is no backlog")

	require.InDelta(t, 10.0, last.ByBizID["orders"].Forwarded, 1e-9)
	require.InDelta(t, 1.0, last.ByBizID["pay"].Forwarded, 1e-9)
	require.InDelta(t, 11.0, last.Total.Forwarded, 1e-9)
	require.Equal(t, 35*time.Second, last.ByBizID["orders"].OldestUnsent)
	require.Equal(t, 95*time.Second, last.Total.OldestUnsent)
}

func TestSampleStoreError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	s := trends.New(trends.Config{}, &fakeStore{err: boom})
	err := s.Sample(t.Context())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "read counts")
	require.Empty(t, s.Samples())
}

func TestRingKeepsTheWindow(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := trends.New(trends.Config{Interval: 5 * time.Second, Window: time.Minute, Now: c.now}, &fakeStore{})
	for range 40 {
		require.NoError(t, s.Sample(t.Context()))
		c.add(5 * time.Second)
	}
	ss := s.Samples()
	require.Len(t, ss, 12) // samples at now-60s were taken 5 s before the last was due
	require.True(t, ss[0].At.After(c.t.Add(-time.Minute-time.Nanosecond)))
	// A clock that jumps ahead hides what is out of the window.
	c.add(2 * time.Minute)
	require.Empty(t, s.Samples())
}

func TestOutcomesOverTheLastHour(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := trends.New(trends.Config{Now: c.now}, &fakeStore{})
	s.Checkback("http://a/check", trends.Commit)
	s.Checkback("http://a/check", trends.Commit)
	s.Checkback("http://a/check", trends.Failed)
	c.add(30 * time.Minute)
	s.Checkback("http://a/check", trends.Rollback)
	s.Checkback("grpc://b:9000", trends.Unknown)
	s.Checkback("grpc://b:9000", "deferred") // not one of the four
	require.Equal(t, []trends.Outcomes{
		{Endpoint: "grpc://b:9000", Unknown: 1},
		{Endpoint: "http://a/check", Commit: 2, Rollback: 1, Failed: 1},
	}, s.Outcomes())
	c.add(45 * time.Minute) // the first minute is out of the hour
	require.Equal(t, []trends.Outcomes{
		{Endpoint: "grpc://b:9000", Unknown: 1},
		{Endpoint: "http://a/check", Rollback: 1},
	}, s.Outcomes())
	c.add(time.Hour)
	require.Empty(t, s.Outcomes())
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	s := trends.New(trends.Config{Interval: time.Hour}, st)
	require.NoError(t, s.Start(t.Context()))
	require.Eventually(t, func() bool { return len(s.Samples()) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Stop(context.Background()))
}

func TestOutcomesBoundEndpoints(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := trends.New(trends.Config{Now: c.now}, &fakeStore{})
	for i := range trends.MaxEndpoints + 7 {
		s.Checkback(fmt.Sprintf("http://h%03d/check", i), trends.Commit)
	}
	out := s.Outcomes()
	require.Len(t, out, trends.MaxEndpoints+1)
	require.Equal(t, trends.Outcomes{Endpoint: trends.OtherEndpoints, Commit: 7}, out[0])
}

// A sample keeps MaxBizIDs bizIDs apart; the rest are added up.
func TestSampleFoldsManyBizIDs(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	var counts []store.Count
	for i := range trends.MaxBizIDs + 10 {
		counts = append(counts, pending(fmt.Sprintf("b%03d", i), int64(i+1), c.t.Add(-time.Duration(i)*time.Second)))
	}
	s := trends.New(trends.Config{Now: c.now}, &fakeStore{counts: counts})
	require.NoError(t, s.Sample(t.Context()))
	smp := s.Samples()[0]
	require.Len(t, smp.ByBizID, trends.MaxBizIDs)
	// b000..b010 have the least backlog: 1+2+...+11 = 66, oldest 10 s.
	require.Equal(t, trends.Value{Backlog: 66, OldestUnsent: 10 * time.Second}, smp.ByBizID[trends.OtherBizIDs])
	require.Contains(t, smp.ByBizID, "b059")
	require.NotContains(t, smp.ByBizID, "b010")
	require.Contains(t, smp.ByBizID, "b011")
	var total int64
	for _, v := range smp.ByBizID {
		total += v.Backlog
	}
	require.Equal(t, smp.Total.Backlog, total, "nothing lost in the fold")
}
