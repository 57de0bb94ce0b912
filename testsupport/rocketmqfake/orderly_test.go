package rocketmqfake_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"github.com/stretchr/testify/require"
)

// TestOrderlyConsumer runs the client's orderly push consumer, which locks
// its queues (LOCK_BATCH_MQ) before it pulls. Its first delivery comes after
// about 3 s (the first pull finds the queue not yet locked and backs off).
//
// The client's orderly consumer has a data race of its own (processQueue:
// putMessage in the pull loop against takeMessages in the consume loop, on
// an unsynchronized tree map), which the race detector reports at once, so
// this test runs only without -race.
func TestOrderlyConsumer(t *testing.T) {
	if raceEnabled {
		t.Skip("rocketmq-client-go v2.1.2's orderly consumer races on its process queue; run without -race")
	}
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("orderly", 2))
	p := newProducer(t, s)
	for _, b := range []string{"o1", "o2", "o3"} {
		_, err := p.SendSync(t.Context(), msg("orderly", b, "T"))
		require.NoError(t, err)
	}
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{s.NameServerAddr()}),
		consumer.WithGroupName("orderly-group"),
		consumer.WithInstance(rmqtest.InstanceName("orderly")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
	)
	require.NoError(t, err)
	got := make(chan string, 16)
	require.NoError(t, c.Subscribe("orderly", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	t.Cleanup(func() { require.NoError(t, c.Shutdown()) })
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case b := <-got:
			seen[b] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("orderly consumer got %v", seen)
		}
	}
	require.Positive(t, s.Requests(rocketmqfake.CodeLockBatchMQ))
}
