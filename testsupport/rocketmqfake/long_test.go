package rocketmqfake_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"github.com/stretchr/testify/require"
)

// TestLongRunning keeps a producer and a push consumer alive across the
// client's background timers (route refresh at 30 s, heartbeats, offset
// persistence every 5 s, rebalance every 20 s) and a broker restart. It
// takes about 40 s, so it runs only with ROCKETMQFAKE_LONG=1.
func TestLongRunning(t *testing.T) {
	if os.Getenv("ROCKETMQFAKE_LONG") == "" {
		t.Skip("set ROCKETMQFAKE_LONG=1 to run (about 40 s)")
	}
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("long", 4))
	p := newProducer(t, s)
	ch := rmqtest.Consume(t, s.NameServerAddr(), "long", "long-group")

	sendAndGet := func(body string) time.Duration {
		t.Helper()
		start := time.Now()
		require.Eventually(t, func() bool {
			res, err := p.SendSync(t.Context(), msg("long", body, "T"))
			return err == nil && res.Status == primitive.SendOK
		}, 20*time.Second, 100*time.Millisecond)
		for {
			select {
			case m := <-ch:
				if string(m.Body) == body {
					return time.Since(start)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s not consumed", body)
			}
		}
	}
	for i := range 8 {
		d := sendAndGet(fmt.Sprintf("m-%d", i))
		t.Logf("t+%ds: m-%d consumed after %s", i*5, i, d)
		if i == 4 {
			s.Stop()
			require.NoError(t, s.Restart())
		}
		time.Sleep(5 * time.Second) // spans the client's timers on purpose
	}
	for _, c := range []int{105, 34, 38, 14, 15, 30, 11, 10} {
		t.Logf("requests %d: %d", c, s.Requests(c))
	}
	require.Positive(t, s.Requests(rocketmqfake.CodeUpdateConsumerOffset), "offsets persisted")
	off, ok := s.ConsumerOffset("long-group", "long", 0)
	t.Logf("offset of queue 0: %d %v", off, ok)
}
