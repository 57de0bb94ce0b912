package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

func records(topic string, n int) []forwarder.Record {
	recs := make([]forwarder.Record, n)
	for i := range recs {
		id := fmt.Sprintf("shop:k%d", i)
		recs[i] = forwarder.Record{
			ID: id, Topic: topic, Key: fmt.Sprintf("fk%d", i), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []envelope.Header{{Key: "trace", Value: []byte("x")}, {Key: envelope.HeaderID, Value: []byte(id)}},
		}
	}
	return recs
}

func TestSendDeliversRecordsExactly(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(3, "biz"))
	tg := newTarget(t, c, nil)
	recs := records("biz", 20)
	recs[0].Key = "" // no forward key: a nil Kafka key
	res := tg.Send(t.Context(), recs)
	require.Len(t, res, 20)
	refs := map[string]int{}
	for i, r := range res {
		require.NoError(t, r.Err)
		require.Regexp(t, `^biz/[0-2]@\d+$`, r.Ref)
		refs[r.Ref] = i
	}
	got := consume(t, c, "biz", 20)
	for _, kr := range got {
		i, ok := refs[fmt.Sprintf("%s/%d@%d", kr.Topic, kr.Partition, kr.Offset)]
		require.True(t, ok, "consumed a record whose ref was not returned")
		want := recs[i]
		if want.Key == "" {
			require.Nil(t, kr.Key)
		} else {
			require.Equal(t, want.Key, string(kr.Key))
		}
		require.Equal(t, want.Value, kr.Value)
		require.Equal(t, []kgo.RecordHeader{{Key: "trace", Value: []byte("x")}, {Key: "ec-id", Value: []byte(want.ID)}}, kr.Headers)
	}
}

func TestAutoCreatedTopic(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.AllowAutoTopicCreation())
	tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.AutoCreateTopics = true })
	res := tg.Send(t.Context(), records("brand-new", 2))
	for _, r := range res {
		require.NoError(t, r.Err)
		require.True(t, strings.HasPrefix(r.Ref, "brand-new/"), r.Ref)
	}
	require.Len(t, consume(t, c, "brand-new", 2), 2)
}

func TestUnknownTopicIsPermanent(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, nil)
	res := tg.Send(t.Context(), records("missing", 1))
	require.Error(t, res[0].Err)
	require.True(t, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
	require.ErrorContains(t, res[0].Err, `kafka topic "missing" does not exist`)
	require.ErrorIs(t, res[0].Err, kerr.UnknownTopicOrPartition)
}

func TestBrokerErrorsAreClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       *kerr.Error
		permanent bool
		want      string
	}{
		{kerr.MessageTooLarge, true, `record for kafka topic "biz" is larger than`},
		{kerr.TopicAuthorizationFailed, true, `not authorized to produce to kafka topic "biz"`},
		{kerr.InvalidRecord, true, `kafka rejected the record for topic "biz"`},
		{kerr.CorruptMessage, false, `produce to kafka topic "biz"`},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, kfake.SeedTopics(1, "biz"))
			tg := newTarget(t, c, nil)
			failed := kfaketest.FailProduce(t, c, "biz", tc.err.Code, 1)
			res := tg.Send(t.Context(), records("biz", 1))
			require.Equal(t, 1, failed())
			require.ErrorIs(t, res[0].Err, tc.err)
			require.Equal(t, tc.permanent, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
			require.ErrorContains(t, res[0].Err, tc.want)
			// The broker is fine again: the next send goes through.
			res = tg.Send(t.Context(), records("biz", 1))
			require.NoError(t, res[0].Err)
		})
	}
}

func TestCancelledSendIsRetryable(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := tg.Send(ctx, records("biz", 3))
	for _, r := range res {
		require.ErrorIs(t, r.Err, context.Canceled)
		require.False(t, forwarder.IsPermanent(r.Err))
	}
}

func TestUnreachableBrokerTimesOutRetryably(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	addrs := c.ListenAddrs()
	c.Close()
	tg, err := kafka.New(kafka.Config{Name: "k", Brokers: addrs, Logger: quiet})
	require.NoError(t, err)
	defer tg.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res := tg.Send(ctx, records("biz", 1))
	require.Error(t, res[0].Err)
	require.False(t, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	require.NoError(t, kafka.Classify("t", nil))
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{kerr.UnknownTopicOrPartition, true},
		{kerr.UnknownTopicID, true},
		{fmt.Errorf("wrapped: %w", kerr.MessageTooLarge), true},
		{kerr.RecordListTooLarge, true},
		{kerr.InvalidTopicException, true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.ClusterAuthorizationFailed, false}, // the center's setup, not the message
		{kerr.PolicyViolation, true},
		{kerr.NotLeaderForPartition, false},
		{kerr.RequestTimedOut, false},
		{kgo.ErrRecordTimeout, false},
		{kgo.ErrRecordRetries, false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false},
	} {
		got := kafka.Classify("biz", tc.err)
		require.ErrorIs(t, got, tc.err)
		require.Equal(t, tc.permanent, forwarder.IsPermanent(got), "%v", tc.err)
		require.Contains(t, got.Error(), `"biz"`)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := kafka.New(kafka.Config{})
	require.ErrorContains(t, err, "Name: required")
	require.ErrorContains(t, err, "Brokers: at least one")
	_, err = kafka.New(kafka.Config{Name: "k", Brokers: []string{""}, UnknownTopicRetries: -1, MetadataMinAge: -time.Second})
	require.ErrorContains(t, err, "Brokers[0]: empty address")
	require.ErrorContains(t, err, "UnknownTopicRetries must not be negative")
	require.ErrorContains(t, err, "MetadataMinAge must not be negative, got -1s")
}

// random returns n incompressible bytes (the producer compresses batches).
func random(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// A payload just under ingest's default limit (1 MiB) is sent: the
// producer's batch limit fits it (franz-go's default, 1,000,012 bytes, does
// not), and records of its key sent with it keep their
// order around it.
func TestSendsAPayloadNearTheDefaultMaxPayload(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, nil)
	recs := []forwarder.Record{
		{ID: "shop:a", Topic: "biz", Key: "k", Value: []byte("before")},
		{ID: "shop:b", Topic: "biz", Key: "k", Value: random(1_020_000, 1),
			Headers: []envelope.Header{{Key: "trace", Value: []byte("t")}, {Key: envelope.HeaderID, Value: []byte("shop:b")}}},
		{ID: "shop:c", Topic: "biz", Key: "k", Value: []byte("after")},
	}
	res := tg.Send(t.Context(), recs)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	got := consume(t, c, "biz", 3)
	require.Equal(t, []byte("before"), got[0].Value)
	require.True(t, bytes.Equal(recs[1].Value, got[1].Value), "the large payload arrived intact")
	require.Equal(t, []byte("after"), got[2].Value)
	require.Equal(t, []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}, {Key: "ec-id", Value: []byte("shop:b")}}, got[1].Headers)
}

// Many records of one partition are still batched within what a broker
// with default settings accepts (max.message.bytes 1,048,588): raising the
// limit for large records must not make batches of small ones too large.
func TestManySmallRecordsStayInBatchesADefaultBrokerAccepts(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.Linger = 50 * time.Millisecond })
	recs := make([]forwarder.Record, 60)
	for i := range recs {
		recs[i] = forwarder.Record{ID: fmt.Sprintf("shop:%d", i), Topic: "biz", Key: "k", Value: random(40_000, byte(i))}
	}
	for i, r := range tg.Send(t.Context(), recs) {
		require.NoError(t, r.Err, "record %d", i)
	}
}

// A record larger than MaxMessageBytes fails for good, naming the limit.
func TestRecordAboveMaxMessageBytesIsPermanent(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "biz"))
	tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.MaxMessageBytes = 10_000 })
	res := tg.Send(t.Context(), []forwarder.Record{
		{ID: "shop:a", Topic: "biz", Value: random(20_000, 1)},
		{ID: "shop:b", Topic: "biz", Value: []byte("small")},
	})
	require.True(t, forwarder.IsPermanent(res[0].Err))
	require.ErrorIs(t, res[0].Err, kerr.MessageTooLarge)
	require.ErrorContains(t, res[0].Err, "max message bytes (10000)")
	require.NoError(t, res[1].Err)
}

func TestMaxMessageBytesValidated(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 100, 1<<30 + 1} {
		_, err := kafka.New(kafka.Config{Name: "k", Brokers: []string{"127.0.0.1:1"}, MaxMessageBytes: n})
		require.ErrorContains(t, err, "MaxMessageBytes", "%d", n)
	}
}
