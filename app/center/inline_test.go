package center

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// While the broker refuses the business topic, inline sends time out and
// the messages go the regular way (written leased, handed over, retried);
// once it accepts again, new messages are sent inline. Every message
// arrives, none is rolled back, and both paths were taken.
func TestInlineSendsFallBackWhileTheBrokerRefuses(t *testing.T) {
	t.Parallel()
	const topic = "orders"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq"), kfake.SeedTopics(1, topic))
	require.NoError(t, err)
	defer cluster.Close()
	cfg := testConfig(t, cluster.ListenAddrs())
	cfg.Forward.InlineTimeout = 200 * time.Millisecond
	cfg.Forward.ScanInterval = 100 * time.Millisecond
	cfg.Forward.BackoffBase = 100 * time.Millisecond
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()
	require.Eventually(t, func() bool { return len(c.Owned.Partitions()) == 2 }, 20*time.Second, 10*time.Millisecond)

	// NOT_ENOUGH_REPLICAS is retriable: franz-go retries it inside a send
	// until the send's deadline, so the inline sends time out.
	refused := kfaketest.FailProduce(t, cluster, topic, kerr.NotEnoughReplicas.Code, 20)
	p, err := clientlib.NewProducer(clientlib.WithBrokers(cluster.ListenAddrs()...))
	require.NoError(t, err)
	defer p.Close()
	next := 0 // the next message number; every fifth is rolled back
	send := func(n int) {
		for range n {
			i := next
			next++
			m := clientlib.Message{BizID: "shop", Key: fmt.Sprintf("k%d", i), Payload: []byte("p"), ForwardTopic: topic}
			require.NoError(t, p.Prepare(t.Context(), m))
			if i%5 == 4 {
				require.NoError(t, p.Rollback(t.Context(), m.BizID, m.Key))
				continue
			}
			require.NoError(t, p.Commit(t.Context(), m.BizID, m.Key))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	got := map[string]int{}
	// forwarded waits until every committed message sent so far arrived.
	forwarded := func() {
		t.Helper()
		want := 0
		for i := range next {
			if i%5 != 4 {
				want++
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		for len(got) < want && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == envelope.HeaderID {
						got[string(h.Value)]++
					}
				}
			})
		}
		for i := range next {
			id := fmt.Sprintf("shop:k%d", i)
			if i%5 == 4 {
				require.Zero(t, got[id], "%s was rolled back", id)
				continue
			}
			require.Positive(t, got[id], "%s forwarded", id)
		}
	}

	send(10)
	require.Eventually(t, func() bool { return inlineCount(t, c, "not_sent") >= 1 }, 20*time.Second, 10*time.Millisecond,
		"inline sends were tried and left to the regular way")
	require.Eventually(t, func() bool { return refused() >= 20 }, 60*time.Second, 10*time.Millisecond)
	forwarded() // by the regular way, once the broker accepted again

	// The breaker, if the refusals opened it, closes after a probe; from
	// then on messages are sent inline again.
	before := inlineCount(t, c, "sent")
	require.Eventually(t, func() bool {
		send(1)
		return inlineCount(t, c, "sent") > before
	}, 30*time.Second, 50*time.Millisecond, "sent inline once the broker accepted again")
	forwarded()
}

// inlineCount is eventcenter_forward_inline_total for a result, summed over
// targets.
func inlineCount(t *testing.T, c *Center, result string) float64 {
	t.Helper()
	mfs, err := c.Registry().Gather()
	require.NoError(t, err)
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "eventcenter_forward_inline_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "result" && lp.GetValue() == result {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
