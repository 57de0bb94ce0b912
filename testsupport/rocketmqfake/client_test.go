package rocketmqfake_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"github.com/stretchr/testify/require"
)

func startFake(t *testing.T, opts ...rocketmqfake.Option) *rocketmqfake.Server {
	t.Helper()
	s, err := rocketmqfake.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// newProducer starts a real producer against the fake.
func newProducer(t *testing.T, s *rocketmqfake.Server, opts ...producer.Option) rocketmqProducer {
	t.Helper()
	base := []producer.Option{
		producer.WithNameServer([]string{s.NameServerAddr()}),
		producer.WithGroupName("fake-test-producer"),
		producer.WithInstanceName(rmqtest.InstanceName("fake-test")),
	}
	p, err := producer.NewDefaultProducer(append(base, opts...)...)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { require.NoError(t, p.Shutdown()) })
	return p
}

type rocketmqProducer interface {
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
}

func msg(topic, body, tag string, keys ...string) *primitive.Message {
	m := primitive.NewMessage(topic, []byte(body))
	if tag != "" {
		m.WithTag(tag)
	}
	if len(keys) > 0 {
		m.WithKeys(keys)
	}
	return m
}

func TestSendSyncSingle(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("orders", 4))
	p := newProducer(t, s)

	m := msg("orders", "hello", "TagA", "biz-1", "1:k1")
	m.WithProperty("trace", "abc")
	res, err := p.SendSync(t.Context(), m)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)

	got := s.Messages("orders")
	require.Len(t, got, 1)
	g := got[0]
	require.Equal(t, "hello", string(g.Body))
	require.False(t, g.Compressed)
	require.Equal(t, "TagA", g.Tag)
	require.Equal(t, []string{"biz-1", "1:k1"}, g.Keys)
	require.Equal(t, "abc", g.Properties["trace"])
	require.Equal(t, "fake-test-producer", g.ProducerGroup)
	require.Equal(t, res.MsgID, g.UniqKey(), "SendResult.MsgID is the client's UNIQ_KEY")
	require.Equal(t, res.OffsetMsgID, g.MsgID)
	require.Len(t, g.MsgID, 32)
	require.Equal(t, res.MessageQueue.QueueId, g.Queue)
	require.Equal(t, res.QueueOffset, g.QueueOffset)
	require.Equal(t, 1, s.Requests(rocketmqfake.CodeSendMessage))
	require.Positive(t, s.Requests(rocketmqfake.CodeGetRouteInfoByTopic))
}

func TestSendSyncBatch(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("batch", 2))
	p := newProducer(t, s)

	res, err := p.SendSync(t.Context(), msg("batch", "a", "T1", "k1"), msg("batch", "b", "T2", "k2"), msg("batch", "c", ""))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.Equal(t, 1, s.Requests(rocketmqfake.CodeSendBatchMessage))
	require.Equal(t, 0, s.Requests(rocketmqfake.CodeSendMessage))

	got := s.Messages("batch")
	require.Len(t, got, 3)
	ids := make([]string, 0, len(got))
	for i, want := range []struct{ body, tag string }{{"a", "T1"}, {"b", "T2"}, {"c", ""}} {
		require.Equal(t, want.body, string(got[i].Body))
		require.Equal(t, want.tag, got[i].Tag)
		require.True(t, got[i].Batch)
		require.Equal(t, got[0].Queue, got[i].Queue, "a batch goes to one queue")
		require.Equal(t, got[0].QueueOffset+int64(i), got[i].QueueOffset)
		ids = append(ids, got[i].MsgID)
	}
	require.Equal(t, strings.Join(ids, ","), res.OffsetMsgID)
}

// TestPushConsumerReadsBack sends small and compressed (≥ 4 KiB) bodies,
// single and batched, and reads them back with the real push consumer.
func TestPushConsumerReadsBack(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("readback", 4))
	p := newProducer(t, s)

	big := bytes.Repeat([]byte("0123456789abcdef"), 600) // 9600 bytes
	type want struct {
		body  []byte
		tag   string
		keys  string
		props map[string]string
	}
	wants := map[string]want{}
	for i := range 6 {
		body := []byte(fmt.Sprintf("small-%d", i))
		if i%2 == 0 {
			body = append([]byte(fmt.Sprintf("big-%d-", i)), big...)
		}
		m := primitive.NewMessage("readback", body)
		m.WithTag(fmt.Sprintf("Tag%d", i%3))
		m.WithKeys([]string{fmt.Sprintf("fk-%d", i), fmt.Sprintf("7:key-%d", i)})
		m.WithProperty("ec-id", fmt.Sprintf("7:key-%d", i))
		m.WithProperty("n", fmt.Sprint(i))
		res, err := p.SendSync(t.Context(), m)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		wants[fmt.Sprint(i)] = want{body, fmt.Sprintf("Tag%d", i%3), fmt.Sprintf("fk-%d 7:key-%d", i, i), map[string]string{"ec-id": fmt.Sprintf("7:key-%d", i)}}
	}
	res, err := p.SendSync(t.Context(), msg("readback", "batched-1", "B"), msg("readback", "batched-2", "B"))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)

	var compressed int
	for _, m := range s.Messages("readback") {
		if m.Compressed {
			compressed++
			require.Greater(t, len(m.Body), 4096)
		}
	}
	require.Equal(t, 3, compressed, "bodies ≥ 4 KiB arrive zlib-compressed and are inflated")

	ch := rmqtest.Consume(t, s.NameServerAddr(), "readback", "readback-group")
	seen := map[string]bool{}
	timeout := time.After(20 * time.Second)
	for len(seen) < 8 {
		select {
		case m := <-ch:
			if n := m.GetProperty("n"); n != "" {
				w := wants[n]
				require.Equal(t, w.body, m.Body, "body of %s", n)
				require.Equal(t, w.tag, m.GetTags())
				require.Equal(t, w.keys, m.GetKeys())
				require.Equal(t, w.props["ec-id"], m.GetProperty("ec-id"))
				require.NotEmpty(t, m.MsgId)
				seen[n] = true
			} else {
				require.Contains(t, []string{"batched-1", "batched-2"}, string(m.Body))
				seen[string(m.Body)] = true
			}
		case <-timeout:
			t.Fatalf("consumer got %d of 8 messages: %v", len(seen), seen)
		}
	}
	// A message sent while the consumer runs arrives through the long poll.
	_, err = p.SendSync(t.Context(), msg("readback", "late", "L"))
	require.NoError(t, err)
	select {
	case m := <-ch:
		require.Equal(t, "late", string(m.Body))
	case <-time.After(10 * time.Second):
		t.Fatal("late message not consumed")
	}
	require.Contains(t, s.ConsumerIDs("readback-group")[0], "rmqtest-")
}

func TestSendHookCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		codes    []int // answer per attempt; the last repeats
		retries  int
		wantErr  string
		status   primitive.SendStatus
		attempts int
		stored   int
	}{
		{name: "service not available once then ok", codes: []int{14, 0}, retries: 2, status: primitive.SendOK, attempts: 2, stored: 1},
		{name: "no permission always", codes: []int{16}, retries: 2, wantErr: "CODE: 16", attempts: 3},
		{name: "system busy is not retried", codes: []int{2}, retries: 2, wantErr: "CODE: 2", attempts: 1},
		{name: "flush disk timeout", codes: []int{10}, retries: 2, status: primitive.SendFlushDiskTimeout, attempts: 1, stored: 1},
		{name: "slave not available", codes: []int{11}, retries: 2, status: primitive.SendSlaveNotAvailable, attempts: 1, stored: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startFake(t, rocketmqfake.WithTopic("hooked", 2))
			calls := 0
			s.SetSendHook(func(topic string, m rocketmqfake.Message) (int, string, time.Duration) {
				code := tc.codes[min(calls, len(tc.codes)-1)]
				calls++
				return code, "injected", 0
			})
			p := newProducer(t, s, producer.WithRetry(tc.retries))
			res, err := p.SendSync(t.Context(), msg("hooked", "x", ""))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.status, res.Status)
			}
			require.Equal(t, tc.attempts, s.Requests(rocketmqfake.CodeSendMessage))
			require.Len(t, s.Messages("hooked"), tc.stored)
		})
	}
}

func TestSendHookDelayTimesOut(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("slow", 1))
	s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) {
		return 0, "", 3500 * time.Millisecond // the client waits 3 s per attempt
	})
	p := newProducer(t, s, producer.WithRetry(0))
	_, err := p.SendSync(t.Context(), msg("slow", "x", ""))
	require.ErrorContains(t, err, "request timeout")
	// The broker stored it anyway: a timeout is not a failure of the send.
	require.Eventually(t, func() bool { return len(s.Messages("slow")) == 1 }, 5*time.Second, 10*time.Millisecond)
}

func TestUnknownTopic(t *testing.T) {
	t.Parallel()
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		s := startFake(t)
		p := newProducer(t, s, producer.WithRetry(0))
		_, err := p.SendSync(t.Context(), msg("nope", "x", ""))
		require.ErrorContains(t, err, "route info not found")
		require.ErrorContains(t, err, "nope")
	})
	t.Run("auto-create", func(t *testing.T) {
		t.Parallel()
		s := startFake(t, rocketmqfake.WithAutoCreateTopics(3))
		p := newProducer(t, s)
		res, err := p.SendSync(t.Context(), msg("fresh", "x", ""))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		require.Len(t, s.Messages("fresh"), 1)
	})
}

func TestStopClosesConnectionsAndRestart(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("restart", 2))
	p := newProducer(t, s, producer.WithRetry(1))
	_, err := p.SendSync(t.Context(), msg("restart", "before", ""))
	require.NoError(t, err)

	raw, err := net.Dial("tcp", s.BrokerAddr())
	require.NoError(t, err)
	defer raw.Close()

	s.Stop()
	// The accepted connection is closed, not only the listener.
	require.NoError(t, raw.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = raw.Read(make([]byte, 1))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "timeout", "the fake must close accepted connections")

	_, err = p.SendSync(t.Context(), msg("restart", "while-down", ""))
	require.Error(t, err)

	require.NoError(t, s.Restart())
	require.Eventually(t, func() bool {
		res, err := p.SendSync(t.Context(), msg("restart", "after", ""))
		return err == nil && res.Status == primitive.SendOK
	}, 15*time.Second, 50*time.Millisecond)

	var bodies []string
	for _, m := range s.Messages("restart") {
		bodies = append(bodies, string(m.Body))
	}
	require.Equal(t, "before", bodies[0])
	require.Equal(t, "after", bodies[len(bodies)-1])
	require.NotContains(t, bodies, "while-down")
	require.Error(t, s.Restart(), "restart of a running server")
}

// MessagesSince hands out only what came after n, and its channel closes
// on the next store, not before.
func TestMessagesSince(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("since", 2))
	p := newProducer(t, s)

	got, more := s.MessagesSince("since", 0)
	require.Empty(t, got)
	got, _ = s.MessagesSince("nosuchtopic", 0)
	require.Empty(t, got)
	for _, b := range []string{"a", "b"} {
		_, err := p.SendSync(t.Context(), msg("since", b, ""))
		require.NoError(t, err)
	}
	select {
	case <-more:
	default:
		t.Fatal("the channel is not closed after a store")
	}
	got, more = s.MessagesSince("since", 1)
	require.Len(t, got, 1)
	require.Equal(t, "b", string(got[0].Body))
	got, _ = s.MessagesSince("since", 2)
	require.Empty(t, got)
	select {
	case <-more:
		t.Fatal("the channel is closed though nothing was stored since")
	default:
	}
	_, err := p.SendSync(t.Context(), msg("since", "c", ""))
	require.NoError(t, err)
	<-more
	got, _ = s.MessagesSince("since", 2)
	require.Len(t, got, 1)
	require.Equal(t, "c", string(got[0].Body))
}
