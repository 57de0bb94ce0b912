package logbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// Concurrent writers lose no line (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b logbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("got %d lines, want 800", got)
	}
}
