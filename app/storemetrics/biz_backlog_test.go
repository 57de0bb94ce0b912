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

	"github.com/eventcenter/eventcenter/store"
)

type backlogStore struct {
	fakeStore
	backlog []store.BizBacklog
	berr    error
}

func (b backlogStore) SendBacklog(context.Context) ([]store.BizBacklog, error) {
	return b.backlog, b.berr
}

func TestSendBacklogGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := backlogStore{backlog: []store.BizBacklog{
		{BizID: "flood", Pending: 200000, Due: 150000, OldestDue: now.Add(-40 * time.Second)},
		{BizID: "x1", Pending: 5, Due: 2, OldestDue: now.Add(-3 * time.Second)},
		{BizID: "x2", Pending: 7, Due: 0},
	}}
	reg := prometheus.NewRegistry()
	c := New(Config{BizIDs: []string{"flood", "quiet"}, Now: func() time.Time { return now }, Registerer: reg}, st)
	require.NoError(t, c.Refresh(t.Context()))
	require.NoError(t, testutil.CollectAndCompare(c.fair.backlog, strings.NewReader(`
# HELP eventcenter_forward_biz_backlog Committed messages not sent yet per bizID: due, being sent, scheduled or waiting for a retry.
# TYPE eventcenter_forward_biz_backlog gauge
eventcenter_forward_biz_backlog{biz_id="flood"} 200000
eventcenter_forward_biz_backlog{biz_id="other"} 12
eventcenter_forward_biz_backlog{biz_id="quiet"} 0
`)))
	require.Equal(t, 150000.0, testutil.ToFloat64(c.fair.due.WithLabelValues("flood")))
	require.Equal(t, 2.0, testutil.ToFloat64(c.fair.due.WithLabelValues("other")))
	require.Equal(t, 40.0, testutil.ToFloat64(c.fair.oldestDue.WithLabelValues("flood")))
	require.Equal(t, 3.0, testutil.ToFloat64(c.fair.oldestDue.WithLabelValues("other")))
	require.Equal(t, 0.0, testutil.ToFloat64(c.fair.oldestDue.WithLabelValues("quiet")), "configured: 0, not absent")

	st.berr = errors.New("db down")
	c = New(Config{}, st)
	require.ErrorContains(t, c.Refresh(t.Context()), "db down")
}
