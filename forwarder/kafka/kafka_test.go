package kafka_test

import (
	"context"
	"errors"
	"fmt"
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

func TestMaxMessageBytesValidated(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 100, 1<<30 + 1} {
		_, err := kafka.New(kafka.Config{Name: "k", Brokers: []string{"127.0.0.1:1"}, MaxMessageBytes: n})
		require.ErrorContains(t, err, "MaxMessageBytes", "%d", n)
	}
}
