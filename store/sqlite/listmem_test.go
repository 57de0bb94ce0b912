package sqlite_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// TestListReadsNoBodies: List over large rows allocates a small part of
// their payloads and headers (it selects neither). Not parallel: the heap
// figure is the process's.
func TestListReadsNoBodies(t *testing.T) {
	clock := storetest.NewClock()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"), sqlite.Options{Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	const n, size = 24, 1 << 20
	payload := bytes.Repeat([]byte{'x'}, size)
	for i := range n {
		c := storetest.Prepare("big", fmt.Sprintf("k-%02d", i), 0, clock.Now())
		c.Event.Body.Payload = payload
		c.Event.Body.Headers = []envelope.Header{{Key: "h", Value: payload[:size/4]}}
		_, err := s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{c}})
		require.NoError(t, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := s.List(t.Context(), store.Filter{Limit: 1000})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, p.Messages, n)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("listing %d messages of %d bytes allocated %d bytes", n, size, alloc)
	require.Less(t, alloc, uint64(n*size/16), "a list must not read the payloads (%d bytes in all)", n*size)
}
