package forwardertest

import (
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
)

// Suite describes one target kind to Run.
type Suite struct {
	// Kind is how the target's errors name its broker ("kafka",
	// "rocketmq"): a missing topic's error says `<Kind> topic "x" does not
	// exist`.
	Kind string
	// New starts a broker holding the topics (name → partitions or
	// queues); the test's end stops it. Each case starts its own.
	New func(t *testing.T, topics map[string]int) Broker
	// OrderedHeaders is true when the broker keeps the headers in the order
	// they were sent (Kafka record headers); RocketMQ properties are a map.
	OrderedHeaders bool
	// UnknownTopicErr and OversizeErr, when set, are the errors the
	// failures of a missing topic and of a record over the size limit
	// wrap (errors.Is).
	UnknownTopicErr, OversizeErr error
	// Payload returns the n-byte values of the cases' larger records (the
	// order case's 1 MiB one, the batching case's 40 KB ones); nil means
	// incompressible random bytes, so that a broker's size limits apply
	// to what is sent, not to what it compresses to.
	Payload func(n int, seed byte) []byte
}

// payload is s.Payload, or random bytes.
func (s Suite) payload(n int, seed byte) []byte {
	if s.Payload != nil {
		return s.Payload(n, seed)
	}
	return random(n, seed)
}

// Broker is one running broker of the target's kind.
type Broker interface {
	// Target returns a new target on this broker; the test's end closes
	// it.
	Target(t *testing.T, o Options) forwarder.Target
	// Received waits until the broker holds n records of topic and
	// returns them (failing the test if it holds more), each partition's
	// or queue's in the order stored.
	Received(t *testing.T, topic string, n int) []Received
	// Throttle makes the broker ask the target to slow down on its next n
	// sends without storing them (Kafka: throttle_time_ms with a retriable
	// error; RocketMQ: SYSTEM_BUSY). It returns the cause the forwarder
	// counts (eventcenter_forward_target_throttled_total) and the pause
	// TargetStatus must show (0: whatever backoff the forwarder chose).
	Throttle(t *testing.T, n int) (cause string, pause time.Duration)
	// Stall makes the broker hold its answers to sends for d from now, so
	// that a send made now is not acknowledged within d.
	Stall(t *testing.T, d time.Duration)
}

// Options are what a case asks of the target it gets.
type Options struct {
	// MaxMessageBytes is the target's size limit; 0 is its default.
	MaxMessageBytes int
	// Linger is how long the target may wait to fill a batch, for a
	// target that batches; 0 is its default.
	Linger time.Duration
	// BatchBytes bounds one batch of records, for a target that batches
	// (Kafka's producer batch); 0 is its default. The ordered cases make
	// it small, so that a key's records span many sends in flight.
	BatchBytes int
}

// Received is one record as the broker stored it.
type Received struct {
	// Partition is the Kafka partition or the RocketMQ queue.
	Partition int
	// Key is the forward key ("" when the record had none).
	Key string
	// ID is the record's ec-id.
	ID    string
	Value []byte
	// Headers are the record's headers, ec-id included, without what the
	// target adds of its own (RocketMQ's KEYS, TAGS, UNIQ_KEY...).
	Headers []envelope.Header
	// Ref is the reference Send returns for this record.
	Ref string
}

// Run runs every case of the suite, each as a parallel subtest with a
// broker of its own.
func Run(t *testing.T, s Suite) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, s)
		})
	}
}

var cases = []struct {
	name string
	run  func(*testing.T, Suite)
}{
	{"UnknownTopic", unknownTopic},
	{"Cancelled", cancelled},
	{"DeadlineWhileBrokerStalls", deadlineWhileBrokerStalls},
	{"Oversize", oversize},
	{"KeysAndHeadersKept", keysAndHeadersKept},
	{"OrderWithinAKey", orderWithinAKey},
	{"Batching", batching},
	{"Throttling", throttling},
	// A forwarder.OrderedTarget's SendInOrder (skipped for other targets).
	{"InOrderPipelined", inOrderPipelined},
	{"InOrderRefusedMidPipeline", inOrderRefusedMidPipeline},
}
