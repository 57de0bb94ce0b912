package rocketmq_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func startFake(t *testing.T, opts ...rocketmqfake.Option) *rocketmqfake.Server {
	t.Helper()
	s, err := rocketmqfake.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func newTarget(t *testing.T, s *rocketmqfake.Server, mod ...func(*rocketmq.Config)) *rocketmq.Target {
	t.Helper()
	cfg := rocketmq.Config{Name: "rmq-" + t.Name(), NameServers: []string{s.NameServerAddr()}}
	for _, m := range mod {
		m(&cfg)
	}
	tg, err := rocketmq.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tg.Close()) })
	return tg
}

func rec(topic, id string) forwarder.Record {
	return forwarder.Record{ID: id, Topic: topic, Key: "fk-" + id, Tag: "TagA", Value: []byte("body-" + id)}
}

// What only a RocketMQ target does with a record: its tag, the KEYS
// property, the producer group, a compressed large body, and the id a
// real consumer sees (keys, headers, values and references as such are
// forwardertest's, TestConformance).
func TestSendRecords(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("orders", 4))
	tg := newTarget(t, s)

	big := bytes.Repeat([]byte("x"), 6000)
	recs := []forwarder.Record{
		{ID: "7:k1", Topic: "orders", Key: "order-1", Tag: "Created", Value: []byte(`{"n":1}`),
			Headers: []envelope.Header{{Key: "trace-id", Value: []byte("t-1")}, {Key: "tenant", Value: []byte("acme")}}},
		{ID: "7:k2", Topic: "orders", Tag: "", Value: big},
		{ID: "7:k3", Topic: "orders", Key: "order-3", Tag: "Paid", Value: []byte("three")},
	}
	res := tg.Send(t.Context(), recs)
	require.Len(t, res, 3)
	refs := map[string]string{}
	for i, r := range res {
		require.NoError(t, r.Err, "record %d", i)
		require.Len(t, r.Ref, 32)
		refs[r.Ref] = recs[i].ID
	}

	got := s.Messages("orders")
	require.Len(t, got, 3)
	byID := map[string]rocketmqfake.Message{}
	for _, m := range got {
		byID[m.Properties[envelope.HeaderID]] = m
		require.Equal(t, refs[m.UniqKey()], m.Properties[envelope.HeaderID], "Ref is the message id")
	}
	m1 := byID["7:k1"]
	require.Equal(t, `{"n":1}`, string(m1.Body))
	require.Equal(t, "Created", m1.Tag)
	require.Equal(t, []string{"order-1", "7:k1"}, m1.Keys)
	require.Equal(t, "eventcenter", m1.ProducerGroup)
	m2 := byID["7:k2"]
	require.Equal(t, big, m2.Body)
	require.True(t, m2.Compressed)
	require.Empty(t, m2.Tag)
	require.Equal(t, []string{"7:k2"}, m2.Keys, "no forward key: only the id")

	// A real consumer sees the same id as Ref, and the same content.
	ch := rmqtest.Consume(t, s.NameServerAddr(), "orders", "readers")
	seen := 0
	for seen < 3 {
		select {
		case m := <-ch:
			id, ok := refs[m.MsgId]
			require.True(t, ok, "consumer msg id %s is a Ref", m.MsgId)
			require.Equal(t, id, m.GetProperty(envelope.HeaderID))
			if id == "7:k2" {
				require.Equal(t, big, m.Body)
			}
			seen++
		case <-time.After(20 * time.Second):
			t.Fatalf("consumed %d of 3", seen)
		}
	}
}

// TestInjectedBrokerCodes checks what Send reports for each code the
// broker may answer, including the ones the client itself retries.
func TestInjectedBrokerCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		codes     []int // per attempt; the last repeats
		retries   int
		wantErr   bool
		permanent bool
		contains  string
		attempts  int
	}{
		{name: "SERVICE_NOT_AVAILABLE once: the client retries and succeeds", codes: []int{14, 0}, attempts: 2},
		{name: "SERVICE_NOT_AVAILABLE always", codes: []int{14}, wantErr: true, contains: "CODE: 14", attempts: 3},
		{name: "SERVICE_NOT_AVAILABLE without client retries", codes: []int{14, 0}, retries: -1, wantErr: true, contains: "CODE: 14", attempts: 1},
		{name: "FLUSH_DISK_TIMEOUT once is a failure, not a success", codes: []int{10, 0}, wantErr: true, contains: "FLUSH_DISK_TIMEOUT", attempts: 1},
		{name: "SLAVE_NOT_AVAILABLE", codes: []int{11, 0}, wantErr: true, contains: "SLAVE_NOT_AVAILABLE", attempts: 1},
		{name: "FLUSH_SLAVE_TIMEOUT", codes: []int{12, 0}, wantErr: true, contains: "FLUSH_SLAVE_TIMEOUT", attempts: 1},
		{name: "SYSTEM_ERROR always", codes: []int{1}, wantErr: true, contains: "CODE: 1,", attempts: 3},
		{name: "SYSTEM_BUSY", codes: []int{2}, wantErr: true, contains: "CODE: 2,", attempts: 1},
		{name: "NO_PERMISSION", codes: []int{16}, wantErr: true, permanent: true, contains: "NO_PERMISSION", attempts: 3},
		{name: "MESSAGE_ILLEGAL", codes: []int{13}, wantErr: true, permanent: true, contains: "illegal", attempts: 1},
		{name: "TOPIC_NOT_EXIST from the broker", codes: []int{17}, wantErr: true, permanent: true, contains: `"hooked" does not exist`, attempts: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startFake(t, rocketmqfake.WithTopic("hooked", 2))
			var calls atomic.Int64
			s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) {
				n := int(calls.Add(1)) - 1
				return tc.codes[min(n, len(tc.codes)-1)], "injected", 0
			})
			tg := newTarget(t, s, func(c *rocketmq.Config) { c.Retries = tc.retries })
			res := tg.Send(t.Context(), []forwarder.Record{rec("hooked", "1:a")})
			require.Len(t, res, 1)
			require.Equal(t, tc.attempts, s.Requests(rocketmqfake.CodeSendMessage))
			if !tc.wantErr {
				require.NoError(t, res[0].Err)
				require.NotEmpty(t, res[0].Ref)
				return
			}
			require.Error(t, res[0].Err)
			require.Empty(t, res[0].Ref, "a failure carries no reference")
			require.ErrorContains(t, res[0].Err, tc.contains)
			require.Equal(t, tc.permanent, forwarder.IsPermanent(res[0].Err), "permanent? %v", res[0].Err)
			require.ErrorContains(t, res[0].Err, "hooked")

			// Whatever failed once, a healthy broker takes the retry.
			s.SetSendHook(nil)
			res = tg.Send(t.Context(), []forwarder.Record{rec("hooked", "1:a")})
			require.NoError(t, res[0].Err)
		})
	}
}

func TestStatusErrorIsTyped(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) { return 10, "", 0 })
	tg := newTarget(t, s)
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})
	var se *rocketmq.StatusError
	require.ErrorAs(t, res[0].Err, &se)
	require.Equal(t, primitive.SendFlushDiskTimeout, se.Status)
	require.Len(t, s.Messages("t"), 1, "the broker kept it: the retry will be a duplicate")
}

func TestNoRouteWhileNameServerDownIsRetryable(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	tg := newTarget(t, s, func(c *rocketmq.Config) { c.Retries = -1 })
	s.Stop()
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})
	require.Error(t, res[0].Err)
	require.False(t, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
	require.ErrorContains(t, res[0].Err, "could not be asked")

	require.NoError(t, s.Restart())
	require.Eventually(t, func() bool {
		return tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})[0].Err == nil
	}, 15*time.Second, 50*time.Millisecond)
}

// A route query that goes unanswered (a slow or restarting name server)
// fails the client's send with "route info not found" although nothing
// was sent: the target asks the name servers itself and, since they know
// the topic now, sends once more, so the message is not put off for a
// retry.
func TestUnansweredRouteQueryIsTriedAgain(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	queries := 0
	s.SetRouteHook(func(topic string) bool {
		if topic != "t" {
			return true
		}
		queries++
		return queries > 1 // the client's first query gets no answer
	})
	tg := newTarget(t, s, func(c *rocketmq.Config) { c.Retries = -1 })
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})
	require.NoError(t, res[0].Err)
	require.NotEmpty(t, res[0].Ref)
	require.Len(t, s.Messages("t"), 1, "sent once")
	require.GreaterOrEqual(t, s.Requests(rocketmqfake.CodeGetRouteInfoByTopic), 2, "the unanswered query, then the target's own")
}

func TestBrokerStoppedThenRestarted(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 2))
	tg := newTarget(t, s, func(c *rocketmq.Config) { c.Retries = 1 })
	require.NoError(t, tg.Send(t.Context(), []forwarder.Record{rec("t", "1:before")})[0].Err)

	s.Stop()
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:down")})
	require.Error(t, res[0].Err)
	require.False(t, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
	require.Empty(t, res[0].Ref)

	require.NoError(t, s.Restart())
	require.Eventually(t, func() bool {
		return tg.Send(t.Context(), []forwarder.Record{rec("t", "1:after")})[0].Err == nil
	}, 15*time.Second, 50*time.Millisecond)
	var ids []string
	for _, m := range s.Messages("t") {
		ids = append(ids, m.Properties[envelope.HeaderID])
	}
	require.Contains(t, ids, "1:before")
	require.Contains(t, ids, "1:after")
	require.NotContains(t, ids, "1:down")
}

func TestSendTimeout(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("slow", 1))
	s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) { return 0, "", 2 * time.Second })
	tg := newTarget(t, s, func(c *rocketmq.Config) { c.SendTimeout = 300 * time.Millisecond })
	start := time.Now()
	res := tg.Send(t.Context(), []forwarder.Record{rec("slow", "1:a")})
	require.Less(t, time.Since(start), 1500*time.Millisecond, "SendTimeout bounds the send")
	require.ErrorContains(t, res[0].Err, "request timeout")
	require.False(t, forwarder.IsPermanent(res[0].Err))
}

func TestTwoNamedTargets(t *testing.T) {
	t.Parallel()
	a := startFake(t, rocketmqfake.WithTopic("ta", 1))
	b := startFake(t, rocketmqfake.WithTopic("tb", 1))
	ta, err := rocketmq.New(rocketmq.Config{Name: "a", NameServers: []string{a.NameServerAddr()}})
	require.NoError(t, err)
	defer func() { require.NoError(t, ta.Close()) }()
	tb, err := rocketmq.New(rocketmq.Config{Name: "b", NameServers: []string{b.NameServerAddr()}})
	require.NoError(t, err)
	defer func() { require.NoError(t, tb.Close()) }()
	// Same group, same name: still distinct clients.
	tb2, err := rocketmq.New(rocketmq.Config{Name: "b", NameServers: []string{b.NameServerAddr()}})
	require.NoError(t, err)
	defer func() { require.NoError(t, tb2.Close()) }()

	require.NoError(t, ta.Send(t.Context(), []forwarder.Record{rec("ta", "1:a")})[0].Err)
	require.NoError(t, tb.Send(t.Context(), []forwarder.Record{rec("tb", "1:b")})[0].Err)
	require.NoError(t, tb2.Send(t.Context(), []forwarder.Record{rec("tb", "1:b2")})[0].Err)
	require.Len(t, a.Messages("ta"), 1)
	require.Len(t, b.Messages("tb"), 2)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  rocketmq.Config
		want string
	}{
		{"host name", rocketmq.Config{Name: "x", NameServers: []string{"localhost:9876"}}, `NameServers[0]: "localhost:9876": host "localhost" must be an IP literal`},
		{"no port", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1"}}, `NameServers[0]: "127.0.0.1" is not ip:port`},
		{"bad port", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1:1", "127.0.0.1:0"}}, `NameServers[1]: "127.0.0.1:0": port "0" must be 1-65535`},
		{"two in one", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1:1;127.0.0.2:1"}}, "NameServers[0]"},
		{"none", rocketmq.Config{Name: "x"}, "NameServers: at least one"},
		{"no name", rocketmq.Config{NameServers: []string{"127.0.0.1:9876"}}, "Name: required"},
		{"bad group", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1:9876"}, Group: "a b"}, "Group:"},
		{"negative timeout", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1:9876"}, SendTimeout: -1}, "SendTimeout:"},
		{"negative max message bytes", rocketmq.Config{Name: "x", NameServers: []string{"127.0.0.1:9876"}, MaxMessageBytes: -1}, "MaxMessageBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := rocketmq.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// IPv6 literals are fine.
	tg, err := rocketmq.New(rocketmq.Config{Name: "v6", NameServers: []string{"[::1]:9876"}})
	require.NoError(t, err)
	require.NoError(t, tg.Close())
	require.NoError(t, tg.Close(), "Close twice")
}

func TestBadRecordsArePermanent(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	tg := newTarget(t, s)
	bad := []forwarder.Record{
		{ID: "1:a", Topic: "t", Value: []byte("x"), Headers: []envelope.Header{{Key: "DELAY", Value: []byte("3")}}},
		{ID: "1:b", Topic: "t", Value: []byte("x"), Headers: []envelope.Header{{Key: "h", Value: []byte("a\x01b")}}},
		{ID: "1:c", Topic: "bad topic", Value: []byte("x")},
		{ID: "1:d", Topic: "t", Value: []byte("x"), Headers: []envelope.Header{{Key: "big", Value: bytes.Repeat([]byte("v"), 40000)}}},
		{ID: "1:e", Topic: "t", Value: []byte("ok")},
	}
	res := tg.Send(t.Context(), bad)
	for i, want := range []string{`"DELAY" is a reserved`, "control character", `topic "bad topic" is invalid`, "properties"} {
		require.ErrorContains(t, res[i].Err, want)
		require.True(t, forwarder.IsPermanent(res[i].Err))
	}
	require.NoError(t, res[4].Err)
	require.Len(t, s.Messages("t"), 1)
}

// RocketMQ 5.x's system properties are reserved too: a forwarded header
// named TIMER_DELIVER_MS or TIMER_DELAY_SEC would make the broker hold the
// message, INNER_MULTI_DISPATCH send it to other queues. Each such record
// fails permanently and nothing is sent; a header merely resembling one
// is sent.
func TestRocketMQ5SystemPropertiesAreReserved(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	tg := newTarget(t, s)
	names := []string{"TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET",
		"__RMQ.TRANSIENT.PROP", "__RMQ.TRANSIENT.ANYTHING", "POP_CK", "TRACE_CONTEXT"}
	var recs []forwarder.Record
	for i, n := range names {
		recs = append(recs, forwarder.Record{ID: fmt.Sprintf("1:r%d", i), Topic: "t", Value: []byte("x"),
			Headers: []envelope.Header{{Key: n, Value: []byte("1893553445678")}}})
	}
	recs = append(recs, forwarder.Record{ID: "1:ok", Topic: "t", Value: []byte("ok"),
		Headers: []envelope.Header{{Key: "timer_deliver_ms_note", Value: []byte("1")}, {Key: "__RMQ.TRANSIENTX", Value: []byte("1")}}})
	res := tg.Send(t.Context(), recs)
	for i, n := range names {
		require.ErrorContains(t, res[i].Err, fmt.Sprintf("%q is a reserved rocketmq property name", n))
		require.True(t, forwarder.IsPermanent(res[i].Err), n)
	}
	require.NoError(t, res[len(names)].Err)
	require.Len(t, s.Messages("t"), 1)
}

func TestSendAfterCloseFails(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	tg, err := rocketmq.New(rocketmq.Config{Name: "closed", NameServers: []string{s.NameServerAddr()}})
	require.NoError(t, err)
	require.NoError(t, tg.Close())
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})
	require.Error(t, res[0].Err)
	require.False(t, forwarder.IsPermanent(res[0].Err))
}

func TestClientLogsGoToSlog(t *testing.T) {
	t.Parallel()
	rlog.Warning("bridge-check-warning", map[string]any{"broker": "b-1", rlog.LogKeyUnderlayError: errors.New("boom")})
	r, ok := clientLogs.find("bridge-check-warning")
	require.True(t, ok)
	require.Equal(t, slog.LevelWarn, r.Level)
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = fmt.Sprint(a.Value.Any()); return true })
	require.Equal(t, "b-1", attrs["broker"])
	require.Equal(t, "boom", attrs[rlog.LogKeyUnderlayError])

	rlog.Info("bridge-check-info", nil)
	r, ok = clientLogs.find("bridge-check-info")
	require.True(t, ok)
	require.Equal(t, slog.LevelDebug, r.Level, "the client's info is our debug")
	rlog.Error("bridge-check-error", nil)
	r, ok = clientLogs.find("bridge-check-error")
	require.True(t, ok)
	require.Equal(t, slog.LevelError, r.Level)
}
