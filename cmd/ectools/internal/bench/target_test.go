package bench

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// startStandIn starts a RocketMQ stand-in the test keeps (Run leaves a
// given one running), so that the test can read what it stored.
func startStandIn(t *testing.T) *rocketmqfake.Server {
	t.Helper()
	s, err := rocketmqfake.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// metric is the value of one series of the center's metrics (0: absent).
func metric(rep *Report, name string) float64 {
	for _, m := range rep.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return 0
}

// storedSeqs are the bench sequence numbers the stand-in stored on topic,
// in store order, by queue.
func storedSeqs(t *testing.T, s *rocketmqfake.Server, topic string) map[int][]int64 {
	t.Helper()
	byQueue := map[int][]int64{}
	for _, m := range s.Messages(topic) {
		seq, err := strconv.ParseInt(m.Properties[seqHeader], 10, 64)
		require.NoError(t, err, "a stored message without %s", seqHeader)
		byQueue[m.Queue] = append(byQueue[m.Queue], seq)
	}
	return byQueue
}

// --target rocketmq: every message reaches the stand-in and the bench
// reads each back.
func TestRunRocketMQ(t *testing.T) {
	t.Parallel()
	s := startStandIn(t)
	cfg := Default()
	cfg.Target, cfg.rmq = TargetRocketMQ, s
	cfg.Messages, cfg.Concurrency, cfg.Partitions = 300, 8, 2
	cfg.Baselines = false
	cfg.DrainTimeout = 30 * time.Second
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	c := rep.Center
	require.Zero(t, c.Errors, c.FirstError)
	require.EqualValues(t, 300, c.Forwarded)
	require.Zero(t, c.Missing)
	require.EqualValues(t, 300, c.CommitToForward.Count)
	require.EqualValues(t, 300, c.CommitToSend.Count, "every stored message carries its born timestamp")
	require.Equal(t, TargetRocketMQ, rep.Config.Target)
	require.True(t, strings.HasPrefix(rep.Config.Topic, "bench_"), rep.Config.Topic)
	require.Positive(t, metric(rep, "eventcenter_forward_total{result=sent,target=rocketmq}"))
	// What the stand-in stored is what the bench counted: every message,
	// and as duplicates the copies beyond the first (at least once).
	seen, stored := map[int64]bool{}, 0
	for _, seqs := range storedSeqs(t, s, rep.Config.Topic) {
		for _, seq := range seqs {
			seen[seq] = true
			stored++
		}
	}
	require.Len(t, seen, 300)
	require.EqualValues(t, stored-300, c.Duplicates)
	var table strings.Builder
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "RocketMQ stand-in")
}

// A hot key to RocketMQ: one producer sending one message after the other
// (so commit order is sequence order) with the stand-in refusing some
// sends (SYSTEM_BUSY: the center puts the key off and sends again): every message arrives once,
// all on one queue, in sequence order, sent head of line (a RocketMQ target
// has no in-order pipeline).
func TestRunRocketMQHotKeyInOrder(t *testing.T) {
	t.Parallel()
	dsn := pgtest.BaseDSN(t)
	const n = 200
	s := startStandIn(t)
	var mu sync.Mutex
	refused := map[string]bool{}
	s.SetSendHook(func(_ string, m rocketmqfake.Message) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		seq := m.Properties[seqHeader]
		if (seq == "40" || seq == "41" || seq == "150") && !refused[seq] {
			refused[seq] = true
			return 2, "injected SYSTEM_BUSY", 0 // retryable; the client does not retry it itself
		}
		return 0, "", 0
	})
	cfg := Default()
	cfg.Target, cfg.rmq = TargetRocketMQ, s
	cfg.Store, cfg.DSN = "postgres", dsn
	cfg.HotKey = true
	cfg.Messages, cfg.Producers, cfg.Concurrency, cfg.Partitions = n, 1, 1, 2
	cfg.Baselines = false
	cfg.DrainTimeout = time.Minute
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	c := rep.Center
	require.Zero(t, c.Errors, c.FirstError)
	require.EqualValues(t, n, c.Forwarded)
	require.Zero(t, c.Missing)
	mu.Lock()
	require.Len(t, refused, 3, "the stand-in refused the chosen sends")
	mu.Unlock()
	require.EqualValues(t, 3, metric(rep, "eventcenter_forward_target_throttled_total{cause=busy,target=rocketmq}"), "the center met each refusal")
	// The refusals held the key, so runs formed behind them.
	require.Positive(t, metric(rep, "eventcenter_forward_order_run_messages_total{send=head_of_line}"))
	require.Zero(t, metric(rep, "eventcenter_forward_order_run_messages_total{send=in_order}"))

	// The ordering promise, as the soak checks it: first deliveries in
	// commit order; a duplicate (at least once: a send that timed out
	// on a loaded machine, say) only after its own first delivery.
	byQueue := storedSeqs(t, s, rep.Config.Topic)
	require.Len(t, byQueue, 1, "one forward key, one queue")
	for _, seqs := range byQueue {
		next := int64(0)
		for i, seq := range seqs {
			require.LessOrEqual(t, seq, next, "the stand-in's %dth message, %d, came before the first delivery of %d", i, seq, next)
			if seq == next {
				next++
			}
		}
		require.EqualValues(t, n, next, "every message delivered")
		require.EqualValues(t, len(seqs)-n, c.Duplicates)
	}
}
