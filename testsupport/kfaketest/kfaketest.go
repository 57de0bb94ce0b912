package kfaketest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicID returns a topic's id (produce v13+ names topics by id).
func TopicID(t *testing.T, c *kfake.Cluster, topic string) [16]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(t.Context(), topic)
	require.NoError(t, err)
	require.NoError(t, td[topic].Err)
	return td[topic].ID
}

// FailProduce makes the next `times` produce requests touching topic fail
// with the error code on every partition (times < 0: for ever). It returns a
// function reporting how many requests it failed.
func FailProduce(t *testing.T, c *kfake.Cluster, topic string, code int16, times int) func() int {
	t.Helper()
	return FailProduceAfter(t, c, topic, code, 0, times)
}

// FailProduceAfter is FailProduce once `after` produce requests touching
// topic went through: the broker writes those, then fails the next `times`
// (a fault in the middle of a pipeline of requests).
func FailProduceAfter(t *testing.T, c *kfake.Cluster, topic string, code int16, after, times int) func() int {
	t.Helper()
	id := TopicID(t, c, topic)
	failed := make(chan struct{}, 1<<16)
	passed := 0
	c.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		pr := req.(*kmsg.ProduceRequest)
		hit := false
		for _, rt := range pr.Topics {
			hit = hit || rt.Topic == topic || rt.TopicID == id
		}
		if !hit {
			return nil, nil, false
		}
		if passed < after {
			passed++
			c.KeepControl()
			return nil, nil, false
		}
		if times >= 0 && len(failed) >= times {
			c.DropControl()
			return nil, nil, false
		}
		// Kept for ever once kept: kfake never resets the flag, so the
		// count above decides when to stop.
		c.KeepControl()
		failed <- struct{}{}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, p := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = p.Partition
				sp.ErrorCode = code
				sp.BaseOffset = -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() int { return len(failed) }
}
