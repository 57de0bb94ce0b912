package center

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

// A request body trickled a byte at a time is cut off after
// http.read_timeout; with only a header timeout it was read to its end.
func TestHTTPServerCutsASlowBody(t *testing.T) {
	t.Parallel()
	cfg := config.Default().HTTP
	cfg.ReadTimeout = 300 * time.Millisecond
	readErr := make(chan error, 1)
	srv := newHTTPServer(cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 40\r\n\r\n")
	require.NoError(t, err)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 40 { // 40 bytes at 10 B/s: 4 s when not cut off
			if _, err := conn.Write([]byte("t")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	select {
	case err := <-readErr:
		require.Error(t, err, "the body was read to its end")
		require.Less(t, time.Since(start), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the slow body was not cut off")
	}
	<-done
}

func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(config.Default().HTTP, http.NotFoundHandler())
	require.Positive(t, srv.ReadHeaderTimeout)
	require.Positive(t, srv.ReadTimeout)
	require.GreaterOrEqual(t, srv.WriteTimeout, time.Minute, "long enough for the largest console page")
	require.Positive(t, srv.IdleTimeout, "idle keep-alive connections are closed")
}

// Requests past the cap are answered 503 at once; the cap frees as
// requests end.
func TestCapRequests(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var entered sync.WaitGroup
	entered.Add(2)
	h := capRequests(2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered.Done()
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/block")
			if err == nil {
				_ = resp.Body.Close()
			}
		}()
	}
	entered.Wait()
	resp, err := http.Get(srv.URL + "/x")
	require.NoError(t, err)
	body, _ := io.ReadAll(bufio.NewReader(resp.Body))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.True(t, strings.Contains(string(body), "max_concurrent"), string(body))
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	close(release)
	wg.Wait()
	resp, err = http.Get(srv.URL + "/x")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
