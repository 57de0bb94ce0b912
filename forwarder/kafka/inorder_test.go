package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// sendCtx bounds a send as the forwarder's send timeout does.
func sendCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// keyed returns perKey records of each of keys, interleaved (k0/0, k1/0,
// k0/1, ...), each value "key/n" padded to pad bytes.
func keyed(topic string, keys, perKey, pad int) []forwarder.Record {
	var recs []forwarder.Record
	for n := range perKey {
		for k := range keys {
			v := fmt.Sprintf("k%d/%d/", k, n)
			v += strings.Repeat("x", max(pad-len(v), 0))
			recs = append(recs, forwarder.Record{ID: fmt.Sprintf("shop:k%d-%d", k, n), Topic: topic, Key: fmt.Sprintf("k%d", k), Value: []byte(v)})
		}
	}
	return recs
}

// seq is the n of a record value "key/n/...".
func seq(t *testing.T, v []byte) (string, int) {
	t.Helper()
	parts := strings.SplitN(string(v), "/", 3)
	require.Len(t, parts, 3)
	n, err := strconv.Atoi(parts[1])
	require.NoError(t, err)
	return parts[0], n
}

// checkPrefixes asserts the SendInOrder rule: per key, the acknowledged
// records come first, then only failures; those behind the first failure
// wrap ErrBehindFailed and are not permanent. It returns the acknowledged
// count per key.
func checkPrefixes(t *testing.T, recs []forwarder.Record, res []forwarder.Result) map[string]int {
	t.Helper()
	require.Len(t, res, len(recs))
	acked := map[string]int{}
	failedAt := map[string]int{}
	for i, r := range res {
		k := recs[i].Key
		if _, failed := failedAt[k]; failed {
			require.Error(t, r.Err, "record %d of key %s acknowledged behind a failed one", i, k)
			require.ErrorIs(t, r.Err, forwarder.ErrBehindFailed)
			require.False(t, forwarder.IsPermanent(r.Err), "%v", r.Err)
			continue
		}
		if r.Err != nil {
			failedAt[k] = i
			continue
		}
		acked[k]++
	}
	return acked
}

// checkConsumed asserts the topic holds exactly the acknowledged records,
// each key's in its order.
func checkConsumed(t *testing.T, c *kfake.Cluster, topic string, acked map[string]int) {
	t.Helper()
	total := 0
	for _, n := range acked {
		total += n
	}
	got := consume(t, c, topic, total)
	require.Len(t, got, total)
	next := map[string]int{}
	for _, r := range got {
		k, n := seq(t, r.Value)
		require.Equal(t, next[k], n, "key %s: record %d read where %d was due", k, n, next[k])
		next[k]++
	}
	for k, n := range acked {
		require.Equal(t, n, next[k], "key %s", k)
	}
	// Nothing more than the acknowledged records was written: the end
	// offsets add up to them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	var written int64
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	require.EqualValues(t, total, written, "records on the topic")
}

// The pipelined order of a key's records and a broker error in the
// middle of the pipeline are forwardertest's cases (TestConformance); the
// cases below are the Kafka target's own.

// A retriable error in the middle of the pipeline: franz-go resends the
// refused batch and those behind it in order, and nothing is lost or
// reordered.
func TestSendInOrderRetriesInOrder(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.ClientOptions = []kgo.Opt{kgo.ProducerBatchMaxBytes(2 << 10)} })
	failed := kfaketest.FailProduceAfter(t, c, "biz", kerr.NotLeaderForPartition.Code, 2, 2)
	recs := keyed("biz", 3, 60, 300)
	res := tg.SendInOrder(sendCtx(t), recs)
	require.Equal(t, 2, failed())
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	checkConsumed(t, c, "biz", checkPrefixes(t, recs, res))
}

// A record franz-go would refuse before buffering it (too large) fails
// with every later record of its key; other keys go on. Send, without the
// rule, would deliver the later ones ahead of it.
func TestSendInOrderTooLargeRecordHoldsItsKey(t *testing.T) {
	t.Parallel()
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("large-record client %v", big), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, kfake.SeedTopics(1, "biz"))
			tg := newTarget(t, c, func(cfg *kafka.Config) {
				if !big {
					cfg.MaxMessageBytes = 10_000 // no large-record client
				}
			})
			recs := keyed("biz", 2, 5, 20)
			// k0's third record is too large for the target.
			recs[4].Value = append([]byte("k0/2/"), random(20_000, 1)...)
			if big {
				recs[4].Value = append([]byte("k0/2/"), random(2<<20, 1)...)
				// k1's third goes alone through the large-record client, in
				// its place.
				recs[5].Value = append([]byte("k1/2/"), random(1_020_000, 2)...)
			}
			res := tg.SendInOrder(sendCtx(t), recs)
			acked := checkPrefixes(t, recs, res)
			require.True(t, forwarder.IsPermanent(res[4].Err), "%v", res[4].Err)
			require.ErrorIs(t, res[4].Err, kerr.MessageTooLarge)
			require.Equal(t, map[string]int{"k0": 2, "k1": 5}, acked)
			checkConsumed(t, c, "biz", acked)
		})
	}
}

// With options that let franz-go reorder a partition (no idempotence,
// several requests in flight), SendInOrder sends a key's records head of
// line, with the same rule.
func TestSendInOrderHeadOfLineWithoutIdempotence(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(2, "biz"))
	tg := newTarget(t, c, func(cfg *kafka.Config) {
		cfg.MaxMessageBytes = 10_000
		cfg.ClientOptions = []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5)}
	})
	require.False(t, tg.PipelinesOrder())
	recs := keyed("biz", 3, 6, 20)
	recs[7].Value = append([]byte("k1/2/"), random(20_000, 1)...)
	res := tg.SendInOrder(sendCtx(t), recs)
	acked := checkPrefixes(t, recs, res)
	require.Equal(t, map[string]int{"k0": 6, "k1": 2, "k2": 6}, acked)
	checkConsumed(t, c, "biz", acked)
}
