package producerapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heapObjects is the bytes of heap objects, live or not yet swept.
func heapObjects() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// batchOf is a reader of a batch of about size bytes of prepares for
// bizID, made as it is read: the client holds no copy, so the heap the
// test measures is the server's.
func batchOf(bizID string, size int) io.Reader {
	env := fmt.Sprintf(`{"type":"prepare","biz_id":%q,"key":"k","payload":%q,"headers":{"ec-topic":"t"}}`, bizID, strings.Repeat("p", 64<<10))
	rs := []io.Reader{strings.NewReader(`{"envelopes":[`)}
	for i := range size / (len(env) + 1) {
		if i > 0 {
			rs = append(rs, strings.NewReader(","))
		}
		rs = append(rs, strings.NewReader(env))
	}
	return io.MultiReader(append(rs, strings.NewReader(`]}`))...)
}

// 24 parallel 8 MiB batches with a token whose rate is used up, through a
// real listener: each is refused 429 before its body is read, and the
// heap's peak (sampled every millisecond) stays near where it started.
// The figure is logged:
//
//	go test -run TestBatchMemoryWithSpentToken -count=5 -v ./producerapi/
//
// Not parallel: the heap is the process's.
func TestBatchMemoryWithSpentToken(t *testing.T) {
	const parallel, size = 24, 8 << 20
	const spent = "spent-token-0123456789"
	f := newFixture(t, func(c *Config) {
		c.Tokens = append(c.Tokens, Token{Name: "spent", Token: spent, BizIDs: []string{"*"}, Rate: 0.001, Burst: 1})
	})
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	post := func(path string, body io.Reader, ct string) (int, error) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+path, body)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+spent)
		req.Header.Set("Content-Type", ct)
		// The client sends the body only once the server asks for it
		// (100 Continue), so that a body refused unread is not cut off
		// with a reset: the heap measured is what the server read.
		req.Header.Set("Expect", "100-continue")
		resp, err := clientFor(srv, req).Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	code, err := post("/v1/messages/orders/k/commit", nil, "application/octet-stream")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, "the bucket's one envelope")

	runtime.GC()
	base := heapObjects()
	stop, peaked := make(chan struct{}), make(chan uint64)
	go func() {
		peak := base
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peaked <- peak
				return
			case <-tick.C:
				peak = max(peak, heapObjects())
			}
		}
	}()
	codes, errs := make([]int, parallel), make([]error, parallel)
	var wg sync.WaitGroup
	for i := range parallel {
		wg.Go(func() { codes[i], errs[i] = post("/v1/batch", batchOf("orders", size), "application/json") })
	}
	wg.Wait()
	close(stop)
	growth := <-peaked - base
	t.Logf("%d parallel %d MiB batches with a spent token: heap peak %.1f MiB above the start", parallel, size>>20, float64(growth)/(1<<20))
	for i := range parallel {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusTooManyRequests, codes[i])
	}
	require.Less(t, growth, uint64(32<<20), "the bodies were not read")
}
