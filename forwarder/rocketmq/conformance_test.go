package rocketmq_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/forwardertest"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// The RocketMQ target passes the suite every forward target passes, on
// the RocketMQ stand-in.
func TestConformance(t *testing.T) {
	t.Parallel()
	forwardertest.Run(t, forwardertest.Suite{
		Kind: "rocketmq",
		New: func(t *testing.T, topics map[string]int) forwardertest.Broker {
			var opts []rocketmqfake.Option
			for name, n := range topics {
				opts = append(opts, rocketmqfake.WithTopic(name, n))
			}
			return &fakeBroker{s: startFake(t, opts...)}
		},
		// The client zlib-compresses every body over 4 KiB and waits at
		// most 3 s per attempt: a random 1 MiB body takes 2.7 s to send
		// under the race detector (65 ms compressible), so attempts
		// timed out on a loaded machine. RocketMQ sends no batches and
		// checks sizes before compressing, so nothing the cases check
		// depends on it.
		Payload: func(n int, seed byte) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i%251) ^ seed
			}
			return b
		},
	})
}

// fakeBroker is forwardertest.Broker on the RocketMQ stand-in.
type fakeBroker struct{ s *rocketmqfake.Server }

func (b *fakeBroker) Target(t *testing.T, o forwardertest.Options) forwarder.Target {
	return newTarget(t, b.s, func(c *rocketmq.Config) { c.MaxMessageBytes = o.MaxMessageBytes })
}

// ownProperties are the properties the target or the client set of their
// own, not from the record's headers.
var ownProperties = map[string]bool{
	primitive.PropertyKeys: true, primitive.PropertyTags: true, primitive.PropertyShardingKey: true,
	primitive.PropertyUniqueClientMessageIdKeyIndex: true, primitive.PropertyWaitStoreMsgOk: true,
}

// Received waits until the topic holds n messages (failing if it holds
// more) and returns them in store order. The forward key is the sharding
// key, and KEYS must be the forward key (when there is one) then the id.
func (b *fakeBroker) Received(t *testing.T, topic string, n int) []forwardertest.Received {
	t.Helper()
	require.Eventually(t, func() bool { return len(b.s.Messages(topic)) >= n }, 10*time.Second, 10*time.Millisecond, "%d messages in %s", n, topic)
	msgs := b.s.Messages(topic)
	require.Len(t, msgs, n, "messages in %s", topic)
	out := make([]forwardertest.Received, 0, n)
	for _, m := range msgs {
		r := forwardertest.Received{
			Partition: m.Queue, Key: m.Properties[primitive.PropertyShardingKey], ID: m.Properties[envelope.HeaderID],
			Value: m.Body, Ref: m.UniqKey(),
		}
		keys := []string{r.ID}
		if r.Key != "" {
			keys = []string{r.Key, r.ID}
		}
		require.Equal(t, keys, m.Keys, "KEYS of %s: the forward key, then the id", r.ID)
		for k, v := range m.Properties {
			if !ownProperties[k] {
				r.Headers = append(r.Headers, envelope.Header{Key: k, Value: []byte(v)})
			}
		}
		out = append(out, r)
	}
	return out
}

// Throttle answers the next n sends SYSTEM_BUSY (flow control).
func (b *fakeBroker) Throttle(t *testing.T, n int) (string, time.Duration) {
	var left atomic.Int64
	left.Store(int64(n))
	b.s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) {
		if left.Add(-1) >= 0 {
			return rocketmqfake.ResSystemBusy, "[PC_SYNCHRONIZED]broker busy", 0
		}
		return rocketmqfake.ResSuccess, "", 0
	})
	t.Cleanup(func() { require.Negative(t, left.Load(), "every busy answer was given, and a send after them") })
	return "busy", 0
}

// Stall delays the answer to every send until d has passed.
func (b *fakeBroker) Stall(t *testing.T, d time.Duration) {
	until := time.Now().Add(d)
	b.s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) {
		return rocketmqfake.ResSuccess, "", max(0, time.Until(until))
	})
}
