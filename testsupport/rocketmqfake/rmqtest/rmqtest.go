package rmqtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"
)

var instanceSeq atomic.Int64

// InstanceName returns a process-unique client instance name. The client
// keeps a process-global map of clients keyed by ip@instance; two clients
// with one instance name but different name servers cannot coexist.
func InstanceName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

var quietOnce sync.Once

// Quiet sets the client's process-global log level to error (it logs at
// info by default and is chatty). It only changes a level, so it is safe
// while clients run.
func Quiet() { quietOnce.Do(func() { rlog.SetLogLevel("error") }) }

// Consume starts a clustering push consumer in group on topic, reading from
// the first offset, and returns a channel with every message it gets
// (tags are not filtered). The consumer is shut down when the test ends.
// Messages not read from the channel by then are dropped.
func Consume(t testing.TB, nameServer, topic, group string) <-chan *primitive.MessageExt {
	t.Helper()
	Quiet()
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{nameServer}),
		consumer.WithGroupName(group),
		consumer.WithInstance(InstanceName("rmqtest")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatalf("rmqtest: new push consumer for %s: %v", topic, err)
	}
	out := make(chan *primitive.MessageExt, 1024)
	done := make(chan struct{})
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			select {
			case out <- m:
			case <-done:
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatalf("rmqtest: subscribe %s: %v", topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("rmqtest: start push consumer for %s: %v", topic, err)
	}
	t.Cleanup(func() {
		close(done)
		waitRebalances()
		if err := c.Shutdown(); err != nil {
			t.Errorf("rmqtest: shut down push consumer for %s: %v", topic, err)
		}
	})
	return out
}

// waitRebalances waits (at most 10 s) until no rebalance of the client is
// running. rocketmq-client-go v2.1.2 races with itself otherwise: Shutdown
// sets the client's close flag while the rebalance that Start runs in its own
// goroutine reads it (internal/client.go:555 vs :576), which the race
// detector reports when a test ends while a queue's offset is still being
// fetched. The client exposes no way to wait for it, so the goroutines are
// looked for by name.
func waitRebalances() {
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		stacks := string(buf[:n])
		if !strings.Contains(stacks, "(*rmqClient).RebalanceImmediately") && !strings.Contains(stacks, "(*rmqClient).RebalanceIfNotPaused") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LeakOptions are the goleak options for goroutines the rocketmq client
// leaves behind and cannot be made to stop: every client, producer or
// consumer, starts timers that first sleep (10 s and more) before they look
// at their done channel; a push consumer starts statistics goroutines that
// sleep until the next minute, hour and month, a pull in flight waits for its
// 30 s RPC timeout, and a package-level cache runs a janitor forever. All of
// the client's timers run under primitive.WithRecover, so that function
// is ignored anywhere on the stack, and so are the push consumer's pull
// loop and the rebalance its Start runs (its heartbeat may wait 3 s for an
// answer on a connection Shutdown closed); goroutines of our own code are still
// checked.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/primitive.WithRecover"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).pullMessage"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).RebalanceImmediately"),
		goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
	}
}
