package clientlib_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
)

func TestDeduperSeen(t *testing.T) {
	t.Parallel()
	d := clientlib.NewDeduper(2)
	require.False(t, d.Seen("a"))
	require.True(t, d.Seen("a"))
	require.False(t, d.Seen("b"))
	require.True(t, d.Seen("a")) // a is now the most recent
	require.False(t, d.Seen("c"))
	require.Equal(t, 2, d.Len())
	require.False(t, d.Seen("b"), "b was the least recently seen and pushed out")
	require.False(t, d.Seen("a"), "a was pushed out by b")
}

func TestDeduperForget(t *testing.T) {
	t.Parallel()
	d := clientlib.NewDeduper(10)
	require.False(t, d.Seen("a"))
	d.Forget("a")
	d.Forget("never-seen")
	require.Zero(t, d.Len())
	require.False(t, d.Seen("a"))
	require.True(t, d.Seen("a"))
}

func TestDeduperTTL(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	d := clientlib.NewDeduper(10, clientlib.WithTTL(time.Minute), clientlib.WithDeduperClock(func() time.Time { return now }))
	require.False(t, d.Seen("a"))
	now = now.Add(59 * time.Second)
	require.True(t, d.Seen("a"))
	now = now.Add(time.Second)
	require.False(t, d.Seen("a"), "expired a minute after it was first seen")
	now = now.Add(30 * time.Second)
	require.True(t, d.Seen("a"), "seen anew when it expired")
}

func TestDeduperMinimumSize(t *testing.T) {
	t.Parallel()
	d := clientlib.NewDeduper(0)
	require.False(t, d.Seen("a"))
	require.True(t, d.Seen("a"))
	require.False(t, d.Seen("b"))
	require.Equal(t, 1, d.Len())
}

func TestDeduperConcurrent(t *testing.T) {
	t.Parallel()
	d := clientlib.NewDeduper(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := map[string]int{}
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := strconv.Itoa(i)
				if !d.Seen(id) {
					mu.Lock()
					firsts[id]++
					mu.Unlock()
				}
				_ = w
			}
		})
	}
	wg.Wait()
	require.Len(t, firsts, 200)
	for id, n := range firsts {
		require.Equal(t, 1, n, id)
	}
}

func TestRecordID(t *testing.T) {
	t.Parallel()
	r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("x")}, {Key: "ec-id", Value: []byte("order:42")}}}
	id, ok := clientlib.RecordID(r)
	require.True(t, ok)
	require.Equal(t, "order:42", id)
	_, ok = clientlib.RecordID(&kgo.Record{})
	require.False(t, ok)

	d := clientlib.NewDeduper(10)
	require.False(t, d.SeenRecord(r))
	require.True(t, d.SeenRecord(r))
	require.False(t, d.SeenRecord(&kgo.Record{}))
	require.False(t, d.SeenRecord(&kgo.Record{}), "records without ec-id are never duplicates")
}
