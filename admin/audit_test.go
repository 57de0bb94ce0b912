package admin_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
)

// TestAuditLog: every kind of operator action, the DLQ replay of a record
// whose message does not exist and of one that names no message included,
// lands in GET /api/v1/audit, newest first, with who and why; the list
// filters by bizID and time and pages by id; a read token may list it.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	dlq := newFakeDLQ()
	dlq.recs = append(dlq.recs, admin.DLQRecord{Partition: 2, Offset: 5, Key: []byte("no-colon"), Value: []byte("x")})
	env := admintest.New(t, dlq)
	decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "resolve"),
		map[string]string{"reason": "asked the owner", "decision": "rollback"}), http.StatusOK)
	env.Clock.Advance(time.Minute)
	since := env.Clock.Now()
	decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz2, admintest.KeyDead, "redeliver"), reason("topic fixed")), http.StatusOK)
	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(1, 0), reason("producer fixed")), http.StatusOK)
	require.True(t, res.Audited, "the replay of a message the center has not seen is audited too")
	res = decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(2, 5), reason("key fixed")), http.StatusOK)
	require.True(t, res.Audited)

	l := decode[adminapi.AuditLog](t, get(t, env, "/api/v1/audit"), http.StatusOK)
	require.Len(t, l.Entries, 4)
	require.Empty(t, l.Next)
	type row struct{ biz, key, action, who string }
	var rows []row
	for _, e := range l.Entries {
		rows = append(rows, row{e.BizID, e.Key, e.Action, e.Who})
		require.NotEmpty(t, e.Reason)
	}
	require.Equal(t, []row{
		{"", "dlq:2/5", "dlq_replay", admintest.AdminName},
		{"pay", "y", "dlq_replay", admintest.AdminName},
		{admintest.Biz2, admintest.KeyDead, "redeliver", admintest.AdminName},
		{admintest.Biz, admintest.KeyStuck, "resolve_rollback", admintest.AdminName},
	}, rows)
	require.Equal(t, "NONE", l.Entries[1].Before)
	require.Contains(t, l.Entries[1].Reason, "producer fixed")

	page := decode[adminapi.AuditLog](t, get(t, env, "/api/v1/audit?limit=3"), http.StatusOK)
	require.Len(t, page.Entries, 3)
	require.NotEmpty(t, page.Next)
	page = decode[adminapi.AuditLog](t, get(t, env, "/api/v1/audit?limit=3&before_id="+page.Next), http.StatusOK)
	require.Len(t, page.Entries, 1)
	require.Equal(t, admintest.KeyStuck, page.Entries[0].Key)
	page = decode[adminapi.AuditLog](t, get(t, env, "/api/v1/audit?biz_id="+admintest.Biz), http.StatusOK)
	require.Len(t, page.Entries, 1)
	page = decode[adminapi.AuditLog](t, get(t, env, "/api/v1/audit?since="+since.UTC().Format(time.RFC3339)), http.StatusOK)
	require.Len(t, page.Entries, 3)

	for _, q := range []string{"?since=yesterday", "?before_id=0", "?limit=0", "?who=x"} {
		require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/audit"+q).code, q)
	}
	require.Equal(t, http.StatusUnauthorized, do(t, env, call{method: "GET", path: "/api/v1/audit"}).code)
}

// TestReplayAuditFailureIsCounted: when the audit record cannot be written
// the replay (already done) answers audited=false and is counted.
func TestReplayAuditFailureIsCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h, err := admin.NewHandler(admin.Config{Insecure: true, Logger: admintest.Quiet, Registerer: reg}, fakeStore{err: errors.New("disk full")}, newFakeDLQ())
	require.NoError(t, err)
	env := &admintest.Env{Handler: h, Server: newServer(t, h)}
	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(1, 0), reason("fixed")), http.StatusOK)
	require.True(t, res.Replayed)
	require.False(t, res.Audited)
	require.Equal(t, 1.0, counterValue(t, reg, "dlq_replay", "not_audited"))
}
