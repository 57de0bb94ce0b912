package admin_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/envelope"
)

// bigDLQ is 150 dead letters of 1 MiB each (one shared buffer, so the
// fixture itself costs 1 MiB).
func bigDLQ() *fakeDLQ {
	v := bytes.Repeat([]byte("x"), 1<<20)
	d := &fakeDLQ{}
	for i := range 150 {
		d.recs = append(d.recs, admin.DLQRecord{Partition: 0, Offset: int64(i), Key: []byte("orders:big"), Value: v,
			Headers: []envelope.Header{{Key: "ec-dlq-reason", Value: []byte("too large")}}})
	}
	return d
}

// TestDLQListMemory: listing 150 dead letters of 1 MiB allocates far less
// than the records' size (values are cut to a preview and encoded once).
// Not parallel: TotalAlloc is the whole process's.
func TestDLQListMemory(t *testing.T) {
	// No byte bound on the page, so that every record is in it and the
	// bound measured is the preview's.
	env := admintest.New(t, bigDLQ(), func(c *admin.Config) { c.DLQPageBytes = 1 << 40 })
	req := httptest.NewRequest("GET", "/api/v1/dlq?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+admintest.ReadToken)
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	env.Handler.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 300)])
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("list of 150 dead letters of 1 MiB: %d bytes allocated, %d bytes answered", alloc, rec.Body.Len())
	require.Less(t, alloc, uint64(16<<20), "150 MiB of records; the answer holds previews only")
	require.Less(t, rec.Body.Len(), 1<<20)
}

func TestDLQListPreviewAndOneEncoding(t *testing.T) {
	t.Parallel()
	// "a" then 2-byte characters: a cut at 1024 bytes splits one.
	text := "a" + strings.Repeat("é", 1500)
	bin := append([]byte{0xff, 0xfe}, bytes.Repeat([]byte{0}, 3000)...)
	d := &fakeDLQ{recs: []admin.DLQRecord{
		{Partition: 0, Offset: 0, Key: []byte("orders:t"), Value: []byte(text)},
		{Partition: 0, Offset: 1, Key: []byte("orders:b"), Value: bin},
		{Partition: 0, Offset: 2, Key: []byte("orders:s"), Value: []byte("short")},
	}}
	env := admintest.New(t, d)
	a := get(t, env, "/api/v1/dlq")
	l := decode[adminapi.DLQList](t, a, http.StatusOK)
	require.Equal(t, 1024, l.PreviewBytes)
	require.Len(t, l.Records, 3)

	r := l.Records[0]
	require.Equal(t, adminapi.EncodingText, r.ValueEncoding)
	require.Equal(t, text[:1023], r.Value, "cut before the split character")
	require.Equal(t, len(text), r.ValueSize)
	require.True(t, r.ValueTruncated)

	r = l.Records[1]
	require.Equal(t, adminapi.EncodingBase64, r.ValueEncoding)
	require.Len(t, r.Value, 1368) // base64 of 1024 bytes
	require.Equal(t, len(bin), r.ValueSize)
	require.True(t, r.ValueTruncated)

	r = l.Records[2]
	require.Equal(t, "short", r.Value)
	require.False(t, r.ValueTruncated)

	// One encoding per value: no second copy of it in the answer.
	body := string(a.body)
	require.NotContains(t, body, "value_base64")
	require.NotContains(t, body, "value_text")
	require.Equal(t, 1, strings.Count(body, "\"short\""))

	// The whole record, one at a time.
	w := decode[adminapi.DLQRecord](t, get(t, env, adminapi.DLQRecordPath(0, 0)), http.StatusOK)
	require.Equal(t, text, w.Value)
	require.False(t, w.ValueTruncated)
	require.Equal(t, http.StatusNotFound, get(t, env, adminapi.DLQRecordPath(0, 9)).code)
	require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/dlq/x/0").code)
}

// TestDLQListPageBytes: a page stops before the record that would pass the
// byte bound, and its cursor continues there.
func TestDLQListPageBytes(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, bigDLQ(), func(c *admin.Config) { c.DLQPageBytes = 3 << 20 })
	l := decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?limit=1000"), http.StatusOK)
	require.Len(t, l.Records, 3)
	require.Equal(t, "3", l.Next)
	require.Equal(t, 3<<20, l.MaxBytes)
	l = decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?limit=1000&cursor="+l.Next), http.StatusOK)
	require.Equal(t, int64(3), l.Records[0].Offset)
}

func TestUIDLQPreview(t *testing.T) {
	t.Parallel()
	d := &fakeDLQ{recs: []admin.DLQRecord{{Partition: 1, Offset: 4, Key: []byte("orders:t"),
		Value: []byte(strings.Repeat("v", 2000) + "THE-END")}}}
	env := admintest.New(t, d)
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	p := b.get("/ui/dlq")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.NotContains(t, p.body, "THE-END")
	require.Contains(t, p.body, "2007 bytes")
	require.Contains(t, p.body, `href="/ui/dlq/1/4"`)
	p = b.get("/ui/dlq/1/4")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "THE-END")
}

// The replay banner shows only for a replay this session made: a link
// with chosen text in replayed= and key= shows nothing.
func TestUIDLQBannerCannotBeForged(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, newFakeDLQ())
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	for _, path := range []string{
		"/ui/dlq?replayed=" + url.QueryEscape("0/3. Call +1-555-0100 to restore your account") + "&key=" + url.QueryEscape("support.evil.example"),
		"/ui/dlq?replayed=0%2F3&key=x&flash=AAAA",
	} {
		p := b.get(path)
		require.Equal(t, http.StatusOK, p.code)
		require.NotContains(t, p.body, "Call +1-555-0100")
		require.NotContains(t, p.body, "Replayed")
		require.NotContains(t, p.body, "audit log of x")
	}
	p := b.get("/ui/dlq")
	p = b.post("/ui/dlq/1/0/replay", url.Values{"csrf": {csrf(t, p)}, "reason": {"fixed"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Contains(t, b.get(p.loc).body, "Replayed 1/0 to the control topic.")

	// The signature is the session's: another session's link shows nothing.
	other := newBrowser(t, env)
	other.login(admintest.ReadToken)
	require.NotContains(t, other.get(p.loc).body, "Replayed 1/0")
}
