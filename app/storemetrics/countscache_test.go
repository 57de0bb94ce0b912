package storemetrics

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// slowCounts answers Counts, taking took on the fake clock, and counts
// the queries.
type slowCounts struct {
	mu    sync.Mutex
	now   time.Time
	took  time.Duration
	calls int
	err   error
}

func (s *slowCounts) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *slowCounts) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

func (s *slowCounts) Counts(context.Context) ([]store.Count, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.now = s.now.Add(s.took)
	if s.err != nil {
		return nil, s.err
	}
	return []store.Count{{BizID: "b", N: int64(s.calls)}}, nil
}

// The cache answers from the last count while it is younger than MinAge
// or Factor times the query's duration; errors are not kept.
func TestCountsCache(t *testing.T) {
	t.Parallel()
	st := &slowCounts{now: time.Unix(1000, 0), took: 10 * time.Millisecond}
	c := NewCountsCache(st, 5*time.Second, 20, st.clock)
	n := func() int64 {
		t.Helper()
		cs, err := c.Counts(t.Context())
		require.NoError(t, err)
		return cs[0].N
	}
	require.EqualValues(t, 1, n())
	st.advance(4 * time.Second)
	require.EqualValues(t, 1, n(), "younger than MinAge")
	st.advance(time.Second)
	require.EqualValues(t, 2, n(), "MinAge passed")

	// A slow count (1 s) is kept 20 s.
	st.took = time.Second
	st.advance(5 * time.Second)
	require.EqualValues(t, 3, n())
	st.advance(15 * time.Second)
	require.EqualValues(t, 3, n(), "20 × the query's second")
	st.advance(5 * time.Second)
	require.EqualValues(t, 4, n())

	// Errors are returned, not kept: the next read asks again.
	st.err = errors.New("store down")
	st.advance(time.Minute)
	_, err := c.Counts(t.Context())
	require.ErrorContains(t, err, "store down")
	st.err = nil
	require.EqualValues(t, 6, n())
	require.Equal(t, 6, st.calls)

	// An empty store is a result too.
	empty := NewCountsCache(countsFunc(func() []store.Count { return nil }), 0, 0, nil)
	cs, err := empty.Counts(t.Context())
	require.NoError(t, err)
	require.Empty(t, cs)
}

type countsFunc func() []store.Count

func (f countsFunc) Counts(context.Context) ([]store.Count, error) { return f(), nil }

// Config.Counts replaces the store's Counts (the center passes its cache).
func TestRefreshReadsConfiguredCounts(t *testing.T) {
	t.Parallel()
	st := fakeStore{counts: []store.Count{{BizID: "b", Status: state.Committed, SendStatus: state.SendPending, N: 1}}, oldest: map[string]time.Time{}}
	cached := []store.Count{{BizID: "b", Status: state.Committed, SendStatus: state.SendPending, N: 9, Scheduled: 4}}
	c := New(Config{Counts: func(context.Context) ([]store.Count, error) { return cached, nil }}, st)
	require.NoError(t, c.Refresh(t.Context()))
	require.Equal(t, 4.0, testutil.ToFloat64(c.scheduled))
	require.Equal(t, 5.0, testutil.ToFloat64(c.unsent))
}
