package rocketmq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

func TestBuiltRecordIsSent(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("biz", 2))
	tg := newTarget(t, s)
	r := forwarder.BuildRecord(&state.Message{
		BizID: "42", Key: "order:1", Topic: "biz", ForwardKey: "order-1", Tag: "Paid", Payload: []byte("p"),
		Headers: []envelope.Header{{Key: "ec-id", Value: []byte("forged")}, {Key: "trace", Value: []byte("t")}},
	})
	res := tg.Send(t.Context(), []forwarder.Record{r})
	require.NoError(t, res[0].Err)
	m := s.Messages("biz")
	require.Len(t, m, 1)
	require.Equal(t, "42:order:1", m[0].Properties[envelope.HeaderID])
	require.Equal(t, "t", m[0].Properties["trace"])
	require.Equal(t, []string{"order-1", "42:order:1"}, m[0].Keys)
	require.Equal(t, "Paid", m[0].Tag)
}

func TestFailureStopsTheKeysLaterRecords(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 2))
	s.SetSendHook(func(_ string, m rocketmqfake.Message) (int, string, time.Duration) {
		if m.Properties[envelope.HeaderID] == "1:a2" {
			return 2, "busy", 0 // SYSTEM_BUSY: the client does not retry it
		}
		return 0, "", 0
	})
	tg := newTarget(t, s)
	recs := []forwarder.Record{
		{ID: "1:a1", Topic: "t", Key: "a", Value: []byte("x")},
		{ID: "1:a2", Topic: "t", Key: "a", Value: []byte("x")},
		{ID: "1:b1", Topic: "t", Key: "b", Value: []byte("x")},
		{ID: "1:a3", Topic: "t", Key: "a", Value: []byte("x")},
		// A permanent failure does not hold the key back: it is never sent.
		{ID: "1:c1", Topic: "t", Key: "c", Value: []byte("x"), Headers: []envelope.Header{{Key: "DELAY", Value: []byte("1")}}},
		{ID: "1:c2", Topic: "t", Key: "c", Value: []byte("x")},
	}
	res := tg.Send(t.Context(), recs)
	require.NoError(t, res[0].Err)
	require.ErrorContains(t, res[1].Err, "CODE: 2")
	require.NoError(t, res[2].Err)
	require.ErrorContains(t, res[3].Err, "an earlier message with the same key failed")
	require.False(t, forwarder.IsPermanent(res[3].Err))
	require.True(t, forwarder.IsPermanent(res[4].Err))
	require.NoError(t, res[5].Err)
	var ids []string
	for _, m := range s.Messages("t") {
		ids = append(ids, m.Properties[envelope.HeaderID])
	}
	require.ElementsMatch(t, []string{"1:a1", "1:b1", "1:c2"}, ids)
}
