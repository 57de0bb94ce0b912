package ingest

import (
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// A PREPARE whose forward topic its target cannot send to (rmq.out for a
// RocketMQ target: no dots there) goes to the dead-letter topic with the
// reason, instead of being stored and going DEAD at send time. The same
// topic for a target that takes it, and later records, are applied.
func TestPrepareWithATopicItsTargetRefusesGoesToDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	cfg := e.config()
	var mu sync.Mutex
	var asked []string
	cfg.CheckTopic = func(target, topic string) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, target+"/"+topic)
		if target == "rmq" && topic == "rmq.out" {
			return errors.New(`rocketmq topic "rmq.out" is invalid: it must be 1 to 127 characters of letters, digits, %, |, _ and -`)
		}
		return nil
	}
	in := e.start(cfg, st, nil, NewOwnership())

	bad := prepareRec("shop", "bad", []byte("x"),
		kgo.RecordHeader{Key: envelope.HeaderTarget, Value: []byte("rmq")})
	setHeader(bad, envelope.HeaderTopic, "rmq.out")
	good := prepareRec("shop", "good", []byte("x"))
	setHeader(good, envelope.HeaderTopic, "rmq.out") // the default target takes it
	e.produce(bad, good)

	require.Eventually(t, func() bool { _, ok := st.get("shop", "good"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	_, ok := st.get("shop", "bad")
	require.False(t, ok, "the PREPARE was not stored")
	dead := e.readDLQ(1)
	require.Equal(t, bad.Key, dead[0].Key)
	reason := headerMap(dead[0])[envelope.HeaderDLQReason]
	require.Contains(t, reason, `ec-topic: not a topic target "rmq" can send to: rocketmq topic "rmq.out" is invalid`)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues(envelope.HeaderTopic)), 0)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"rmq/rmq.out", "/rmq.out"}, asked)
}

// setHeader replaces a record's header value.
func setHeader(r *kgo.Record, key, value string) {
	for i := range r.Headers {
		if r.Headers[i].Key == key {
			r.Headers[i].Value = []byte(value)
			return
		}
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
}
