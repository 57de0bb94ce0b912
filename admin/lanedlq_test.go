package admin_test

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// laneDLQs are the dead-letter topics of a default lane and two extra
// lanes: gold holds 2/5 (a record naming no message), silver holds 0/3 at
// the default lane's position with another key.
func laneDLQs() (def, gold, silver *fakeDLQ) {
	def = newFakeDLQ()
	gold = &fakeDLQ{recs: []admin.DLQRecord{{Partition: 2, Offset: 5, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Key: []byte("no-message"),
		Value: []byte("gold value"), Headers: []envelope.Header{{Key: "ec-dlq-reason", Value: []byte("decode: no bizID")}}}}}
	silver = &fakeDLQ{recs: []admin.DLQRecord{{Partition: 0, Offset: 3, Key: []byte("silver:s"), Value: []byte("silver value")}}}
	return def, gold, silver
}

func withLanes(gold, silver admin.DLQ) func(*admin.Config) {
	return func(c *admin.Config) {
		c.LaneDLQs = []admin.LaneDLQ{{Lane: "gold", DLQ: gold}, {Lane: "silver", DLQ: silver}}
	}
}

func recordKeys(rs []adminapi.DLQRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Lane+"|"+r.Key)
	}
	return out
}

// TestLaneDLQ: ?lane= reads and replays the lane's dead-letter topic, not
// the default one, and the replay's audit record and log line name it.
func TestLaneDLQ(t *testing.T) {
	t.Parallel()
	def, gold, silver := laneDLQs()
	logs := &logbuf.Buffer{}
	env := admintest.New(t, def, withLanes(gold, silver), func(c *admin.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })

	l := decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq"), http.StatusOK)
	require.Empty(t, l.Lane)
	require.Equal(t, []string{"gold", "silver"}, l.Lanes)
	require.Equal(t, []string{"|orders:x", "|pay:y", "|pay:z"}, recordKeys(l.Records))
	l = decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?lane=silver&limit=5"), http.StatusOK)
	require.Equal(t, "silver", l.Lane)
	require.Equal(t, []string{"gold", "silver"}, l.Lanes)
	require.Equal(t, []string{"silver|silver:s"}, recordKeys(l.Records))
	l = decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?lane="), http.StatusOK)
	require.Equal(t, []string{"|orders:x", "|pay:y", "|pay:z"}, recordKeys(l.Records), "an empty lane is the default one")

	// The same position in two lanes is two records.
	r := decode[adminapi.DLQRecord](t, get(t, env, adminapi.DLQRecordPath(0, 3)+"?lane=silver"), http.StatusOK)
	require.Equal(t, "silver", r.Lane)
	require.Equal(t, "silver:s", r.Key)
	r = decode[adminapi.DLQRecord](t, get(t, env, adminapi.DLQRecordPath(0, 3)), http.StatusOK)
	require.Empty(t, r.Lane)
	require.Equal(t, "orders:x", r.Key)
	require.Equal(t, http.StatusNotFound, get(t, env, adminapi.DLQRecordPath(2, 5)).code)
	r = decode[adminapi.DLQRecord](t, get(t, env, adminapi.DLQRecordPath(2, 5)+"?lane=gold"), http.StatusOK)
	require.Equal(t, "gold value", r.Value)

	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(2, 5)+"?lane=gold", reason("producer fixed")), http.StatusOK)
	require.Equal(t, adminapi.DLQReplayResult{Lane: "gold", Partition: 2, Offset: 5, Replayed: true, Key: "no-message", Audited: true}, res)
	require.Equal(t, []string{"2/5"}, gold.Replayed())
	require.Empty(t, def.Replayed())
	require.Empty(t, silver.Replayed())
	audit, err := env.Store.Audit(t.Context(), "", "dlq:gold:2/5")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "producer fixed (dead letter 2/5 of lane gold replayed)", audit[0].Reason)
	require.Contains(t, logs.String(), "action=dlq_replay partition=2 offset=5")
	require.Contains(t, logs.String(), "lane=gold")

	// A replay of the default lane does not touch the lanes.
	decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(0, 3), reason("fixed")), http.StatusOK)
	require.Equal(t, []string{"0/3"}, def.Replayed())
	require.Empty(t, silver.Replayed())

	// An unknown lane, or a mistyped parameter, is refused and replays
	// nothing.
	const unknown = `lane "bronze": no such lane; configured lanes: gold, silver`
	for _, a := range []answer{
		get(t, env, "/api/v1/dlq?lane=bronze"),
		get(t, env, adminapi.DLQRecordPath(2, 5)+"?lane=bronze"),
		post(t, env, adminapi.DLQReplayPath(2, 5)+"?lane=bronze", reason("r")),
	} {
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), unknown)
	}
	a := post(t, env, adminapi.DLQReplayPath(0, 3)+"?lan=silver", reason("r"))
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.err(t), `unknown query parameter "lan"`)
	require.Equal(t, []string{"2/5"}, gold.Replayed())
	require.Equal(t, []string{"0/3"}, def.Replayed())
	require.Empty(t, silver.Replayed())
}

// TestLaneDLQNoLanes: without lanes, any lane but the default is refused.
func TestLaneDLQNoLanes(t *testing.T) {
	t.Parallel()
	def := newFakeDLQ()
	env := admintest.New(t, def)
	l := decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq"), http.StatusOK)
	require.Nil(t, l.Lanes)
	for _, a := range []answer{
		get(t, env, "/api/v1/dlq?lane=x"),
		get(t, env, adminapi.DLQRecordPath(0, 3)+"?lane=x"),
		post(t, env, adminapi.DLQReplayPath(0, 3)+"?lane=x", reason("r")),
	} {
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), `lane "x": no such lane, no extra lanes are configured`)
	}
	require.Empty(t, def.Replayed())
}

// TestLaneDLQWithoutDefault: lanes work when the default lane has no
// dead-letter topic here.
func TestLaneDLQWithoutDefault(t *testing.T) {
	t.Parallel()
	_, gold, silver := laneDLQs()
	env := admintest.New(t, nil, withLanes(gold, silver))
	require.Equal(t, http.StatusNotImplemented, get(t, env, "/api/v1/dlq").code)
	l := decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?lane=gold"), http.StatusOK)
	require.Equal(t, []string{"gold|no-message"}, recordKeys(l.Records))
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	body := b.get("/ui/dlq").body
	require.Contains(t, body, "no dead-letter topic is configured")
	require.Contains(t, body, `href="/ui/dlq?lane=gold"`)
}

func TestLaneDLQConfig(t *testing.T) {
	t.Parallel()
	d := newFakeDLQ()
	for name, c := range map[string]struct {
		lanes []admin.LaneDLQ
		want  string
	}{
		"empty name": {[]admin.LaneDLQ{{Lane: "", DLQ: d}}, `LaneDLQs[0].Lane: ""`},
		"blank name": {[]admin.LaneDLQ{{Lane: " gold", DLQ: d}}, `LaneDLQs[0].Lane: " gold"`},
		"dup name":   {[]admin.LaneDLQ{{Lane: "gold", DLQ: d}, {Lane: "gold", DLQ: d}}, `LaneDLQs[1].Lane: "gold" used twice`},
		"nil DLQ":    {[]admin.LaneDLQ{{Lane: "gold", DLQ: d}, {Lane: "silver"}}, "LaneDLQs[1].DLQ (silver): nil"},
	} {
		_, err := admin.NewHandler(admin.Config{Insecure: true, LaneDLQs: c.lanes}, fakeStore{}, d)
		require.ErrorContains(t, err, c.want, name)
	}
	_, err := admin.NewHandler(admin.Config{Insecure: true, LaneDLQs: []admin.LaneDLQ{{Lane: "gold", DLQ: d}}}, fakeStore{}, nil)
	require.NoError(t, err)
}

// TestUILaneDLQ: the console links each lane's dead letters, and its
// record links, replay forms and the redirect after a replay keep the lane.
func TestUILaneDLQ(t *testing.T) {
	t.Parallel()
	def, gold, silver := laneDLQs()
	env := admintest.New(t, def, withLanes(gold, silver))
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)

	p := b.get("/ui/dlq")
	require.Equal(t, http.StatusOK, p.code, p.body)
	body := html.UnescapeString(p.body)
	require.Contains(t, body, `<h1>Dead letters</h1>`)
	require.Contains(t, body, `href="/ui/dlq?lane=gold"`)
	require.Contains(t, body, `href="/ui/dlq?lane=silver"`)
	require.Contains(t, body, `href="/ui/dlq/0/3"`)
	require.Contains(t, body, `action="/ui/dlq/0/3/replay"`)

	p = b.get("/ui/dlq?lane=gold")
	require.Equal(t, http.StatusOK, p.code, p.body)
	body = html.UnescapeString(p.body)
	require.Contains(t, body, `<title>Dead letters of lane gold · eventcenter</title>`)
	require.Contains(t, body, `<h1>Dead letters of lane gold</h1>`)
	require.Contains(t, body, `<a href="/ui/dlq">default</a>`)
	require.Contains(t, body, `href="/ui/dlq?lane=silver"`)
	require.Contains(t, body, `href="/ui/dlq/2/5?lane=gold"`)
	require.Contains(t, body, `action="/ui/dlq/2/5/replay?lane=gold"`)
	require.Contains(t, body, "decode: no bizID")
	require.NotContains(t, body, "orders:x")

	p = b.get("/ui/dlq/2/5?lane=gold")
	require.Equal(t, http.StatusOK, p.code, p.body)
	body = html.UnescapeString(p.body)
	require.Contains(t, body, "gold value")
	require.Contains(t, body, `href="/ui/dlq?lane=gold"`)
	require.Contains(t, body, `action="/ui/dlq/2/5/replay?lane=gold"`)
	require.Equal(t, http.StatusNotFound, b.get("/ui/dlq/2/5").code, "2/5 is in gold only")

	p = b.post("/ui/dlq/2/5/replay?lane=gold", url.Values{"csrf": {csrf(t, p)}, "reason": {"producer fixed"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, []string{"2/5"}, gold.Replayed())
	require.Empty(t, def.Replayed())
	to, err := url.Parse(p.loc)
	require.NoError(t, err)
	require.Equal(t, "/ui/dlq", to.Path)
	require.Equal(t, "gold", to.Query().Get("lane"))
	p = b.get(p.loc)
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "Replayed 2/5 to the control topic of lane gold.")
	// The banner is signed with its lane: moved to another, it is not shown.
	q := to.Query()
	q.Set("lane", "silver")
	require.NotContains(t, b.get("/ui/dlq?"+q.Encode()).body, "Replayed 2/5")
	q.Del("lane")
	require.NotContains(t, b.get("/ui/dlq?"+q.Encode()).body, "Replayed 2/5")

	p = b.get("/ui/dlq?lane=bronze")
	require.Equal(t, http.StatusBadRequest, p.code)
	require.Contains(t, html.UnescapeString(p.body), `lane "bronze": no such lane; configured lanes: gold, silver`)
	require.Equal(t, []string{"2/5"}, gold.Replayed())
}

// failingCountDLQ cannot count its records.
type failingCountDLQ struct{ admin.DLQ }

func (failingCountDLQ) Count(context.Context) (int64, error) { return 0, errors.New("broker down") }

// TestUIOverviewCountsLaneDLQs: the overview's dead-letter count sums
// every lane's topic, and names the lane it could not count.
func TestUIOverviewCountsLaneDLQs(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, countingDLQ{n: 7}, withLanes(countingDLQ{n: 3}, countingDLQ{n: 2}))
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	body := html.UnescapeString(b.get("/ui/").body)
	require.Contains(t, body, "<strong>12</strong> records in the dead-letter topics of 3 lanes")

	// A lane without a count is left out of it.
	env = admintest.New(t, countingDLQ{n: 7}, withLanes(newFakeDLQ(), countingDLQ{n: 2}))
	b = newBrowser(t, env)
	b.login(admintest.ReadToken)
	body = html.UnescapeString(b.get("/ui/").body)
	require.Contains(t, body, "<strong>9</strong> records in the dead-letter topics of 2 lanes")

	env = admintest.New(t, countingDLQ{n: 7}, withLanes(failingCountDLQ{}, countingDLQ{n: 2}))
	b = newBrowser(t, env)
	b.login(admintest.ReadToken)
	body = html.UnescapeString(b.get("/ui/").body)
	require.Contains(t, body, "could not count the dead letters of lane gold: broker down")
	require.False(t, strings.Contains(body, "records in the dead-letter topic"))
}
