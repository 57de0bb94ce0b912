package admin_test

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// TestAPIListReadsNoBodies: listing messages never loads their payloads
// or headers, so a read-scope token cannot make the center hold rows x
// payload bytes for one answer. Not parallel: the heap figure is the
// process's.
func TestAPIListReadsNoBodies(t *testing.T) {
	env := admintest.New(t, nil)
	const n, size = 24, 1 << 20
	payload := bytes.Repeat([]byte{'x'}, size)
	for i := range n {
		c := storetest.Prepare("big", fmt.Sprintf("k-%02d", i), 0, env.Clock.Now())
		c.Event.Body.Payload = payload
		_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{c}})
		require.NoError(t, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := do(t, env, call{method: http.MethodGet, path: adminapi.Prefix + "/messages?biz_id=big&limit=1000", token: admintest.ReadToken})
	runtime.ReadMemStats(&after)
	l := decode[adminapi.MessageList](t, a, http.StatusOK)
	require.Len(t, l.Messages, n)
	for _, m := range l.Messages {
		require.Equal(t, size, m.PayloadSize, m.Key)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("listing %d messages of %d bytes allocated %d bytes", n, size, alloc)
	require.Less(t, alloc, uint64(n*size/8), "a list must not read the payloads (%d bytes in all)", n*size)
}
