package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/envelope"
)

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// fakeDLQ keeps records in memory; the cursor is the index of the next one.
type fakeDLQ struct {
	mu       sync.Mutex
	recs     []admin.DLQRecord
	replayed []string
	fixes    []admin.ReplayFix
}

// List honours the limit and the byte bound; it returns its records whole
// (the handler must cut them).
func (f *fakeDLQ) List(_ context.Context, q admin.DLQQuery) ([]admin.DLQRecord, string, error) {
	i := 0
	if q.After != "" {
		if _, err := fmt.Sscanf(q.After, "%d", &i); err != nil {
			return nil, "", fmt.Errorf("%w: %q", admin.ErrBadDLQCursor, q.After)
		}
	}
	j, used := i, 0
	for j < len(f.recs) && j-i < q.Limit && (q.MaxBytes <= 0 || j == i || used+len(f.recs[j].Value) <= q.MaxBytes) {
		used += len(f.recs[j].Value)
		j++
	}
	next := ""
	if j < len(f.recs) {
		next = fmt.Sprint(j)
	}
	return f.recs[i:j], next, nil
}

func (f *fakeDLQ) Get(_ context.Context, p int32, o int64) (admin.DLQRecord, error) {
	for _, r := range f.recs {
		if r.Partition == p && r.Offset == o {
			return r, nil
		}
	}
	return admin.DLQRecord{}, fmt.Errorf("%w: %d/%d", admin.ErrDLQNotFound, p, o)
}

func (f *fakeDLQ) Replay(_ context.Context, p int32, o int64, fix admin.ReplayFix) (admin.DLQRecord, error) {
	for _, r := range f.recs {
		if r.Partition == p && r.Offset == o {
			f.mu.Lock()
			f.replayed = append(f.replayed, fmt.Sprintf("%d/%d", p, o))
			f.fixes = append(f.fixes, fix)
			f.mu.Unlock()
			return r, nil
		}
	}
	return admin.DLQRecord{}, fmt.Errorf("%w: %d/%d", admin.ErrDLQNotFound, p, o)
}

func (f *fakeDLQ) Replayed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.replayed...)
}

func newFakeDLQ() *fakeDLQ {
	return &fakeDLQ{recs: []admin.DLQRecord{
		{Partition: 0, Offset: 3, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Key: []byte("orders:x"), Value: []byte("{not json"),
			Headers: []envelope.Header{{Key: "ec-dlq-reason", Value: []byte("decode: bad JSON")}, {Key: "ec-dlq-offset", Value: []byte("17")}, {Key: "ec-type", Value: []byte("prepare")}}},
		{Partition: 1, Offset: 0, Key: []byte("pay:y"), Value: []byte{0xff}},
		{Partition: 1, Offset: 1, Key: []byte("pay:z"), Value: nil},
	}}
}

func TestDLQ(t *testing.T) {
	t.Parallel()
	dlq := newFakeDLQ()
	env := admintest.New(t, dlq)
	l := decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?limit=2"), http.StatusOK)
	require.Len(t, l.Records, 2)
	require.Equal(t, "2", l.Next)
	r := l.Records[0]
	require.Equal(t, "orders:x", r.Key)
	require.Equal(t, "decode: bad JSON", r.Reason)
	require.Equal(t, map[string]string{"reason": "decode: bad JSON", "offset": "17"}, r.Info)
	require.Equal(t, "{not json", r.Value)
	require.Equal(t, adminapi.EncodingText, r.ValueEncoding)
	require.Equal(t, 9, r.ValueSize)
	require.False(t, r.ValueTruncated)
	require.Len(t, r.Headers, 1, "ec-dlq-* headers are shown as info")
	require.Equal(t, "/w==", l.Records[1].Value)
	require.Equal(t, adminapi.EncodingBase64, l.Records[1].ValueEncoding)
	l = decode[adminapi.DLQList](t, get(t, env, "/api/v1/dlq?cursor=2"), http.StatusOK)
	require.Len(t, l.Records, 1)
	require.Empty(t, l.Next)

	a := get(t, env, "/api/v1/dlq?cursor=zzz")
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.err(t), "bad dead-letter cursor")
	require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/dlq?limit=-1").code)

	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(1, 0), reason("fixed")), http.StatusOK)
	require.Equal(t, adminapi.DLQReplayResult{Partition: 1, Offset: 0, Replayed: true, Key: "pay:y", Audited: true}, res)
	require.Equal(t, []string{"1/0"}, dlq.Replayed())

	a = post(t, env, adminapi.DLQReplayPath(1, 9), reason("fixed"))
	require.Equal(t, http.StatusNotFound, a.code)
	require.Contains(t, a.err(t), "dead-letter record not found")
	a = post(t, env, "/api/v1/dlq/x/1/replay", reason("fixed"))
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.err(t), "partition")
	a = post(t, env, "/api/v1/dlq/0/-1/replay", reason("fixed"))
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.err(t), "offset")

	// A read token cannot replay, and nothing is replayed.
	a = do(t, env, call{method: "POST", path: adminapi.DLQReplayPath(0, 3), token: admintest.ReadToken, body: reason("fixed")})
	require.Equal(t, http.StatusForbidden, a.code)
	require.Equal(t, []string{"1/0"}, dlq.Replayed())
}

func TestNoDLQ(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	a := get(t, env, "/api/v1/dlq")
	require.Equal(t, http.StatusNotImplemented, a.code)
	require.Contains(t, a.err(t), "no dead-letter topic")
	require.Equal(t, http.StatusNotImplemented, post(t, env, adminapi.DLQReplayPath(0, 0), reason("r")).code)
}
