package rocketmqfake

import (
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawClient speaks the remoting protocol by hand, for the cases the real
// client does not reach.
type rawClient struct {
	t      *testing.T
	nc     net.Conn
	opaque int32
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) send(code int16, ext map[string]string, body []byte) int32 {
	c.t.Helper()
	c.opaque++
	frame, err := (&command{Code: code, Language: "GO", Version: 317, Opaque: c.opaque, ExtFields: ext, Body: body}).encode()
	require.NoError(c.t, err)
	_, err = c.nc.Write(frame)
	require.NoError(c.t, err)
	return c.opaque
}

func (c *rawClient) read() *command {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	cmd, err := readCommand(c.nc)
	require.NoError(c.t, err)
	require.Equal(c.t, int32(1), cmd.Flag&1, "responses have flag bit 0 set")
	return cmd
}

func (c *rawClient) call(code int16, ext map[string]string, body []byte) *command {
	c.t.Helper()
	op := c.send(code, ext, body)
	r := c.read()
	require.Equal(c.t, op, r.Opaque)
	return r
}

func startRaw(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := Start(opts...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestRawUnknownCode(t *testing.T) {
	t.Parallel()
	s := startRaw(t)
	c := dialRaw(t, s.BrokerAddr())
	r := c.call(999, nil, nil)
	require.Equal(t, int16(ResRequestCodeNotSupported), r.Code)
	require.Equal(t, 1, s.Requests(999))
}

func TestRawOffsetsAndConsumerList(t *testing.T) {
	t.Parallel()
	s := startRaw(t, WithTopic("t", 2), WithConsumerListDelay(0))
	c := dialRaw(t, s.BrokerAddr())
	q := map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "1"}

	require.Equal(t, int16(ResQueryNotFound), c.call(CodeQueryConsumerOffset, q, nil).Code)
	upd := map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "1", "commitOffset": "7"}
	require.Equal(t, int16(ResSuccess), c.call(CodeUpdateConsumerOffset, upd, nil).Code)
	r := c.call(CodeQueryConsumerOffset, q, nil)
	require.Equal(t, int16(ResSuccess), r.Code)
	require.Equal(t, "7", r.ExtFields["offset"])
	_, ok := s.ConsumerOffset("other", "t", 1)
	require.False(t, ok, "offsets are per group")

	list := map[string]string{"consumerGroup": "g"}
	require.Equal(t, int16(ResSystemError), c.call(CodeGetConsumerListByGroup, list, nil).Code)
	hb := []byte(`{"clientID":"10.0.0.1@a","producerDataSet":[],"consumerDataSet":[{"groupName":"g"}]}`)
	require.Equal(t, int16(ResSuccess), c.call(CodeHeartbeat, nil, hb).Code)
	r = c.call(CodeGetConsumerListByGroup, list, nil)
	require.Equal(t, int16(ResSuccess), r.Code)
	var ids struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &ids))
	require.Equal(t, []string{"10.0.0.1@a"}, ids.ConsumerIDList)

	// A heartbeat without the group removes the client from it.
	require.Equal(t, int16(ResSuccess), c.call(CodeHeartbeat, nil, []byte(`{"clientID":"10.0.0.1@a","consumerDataSet":[]}`)).Code)
	require.Empty(t, s.ConsumerIDs("g"))

	// Closing the connection forgets the client ids it registered.
	require.Equal(t, int16(ResSuccess), c.call(CodeHeartbeat, nil, hb).Code)
	require.Equal(t, []string{"10.0.0.1@a"}, s.ConsumerIDs("g"))
	c.nc.Close()
	require.Eventually(t, func() bool { return len(s.ConsumerIDs("g")) == 0 }, 5*time.Second, 10*time.Millisecond)
}

func TestRawLongPoll(t *testing.T) {
	t.Parallel()
	s := startRaw(t, WithTopic("t", 1), WithLongPollTimeout(200*time.Millisecond))
	c := dialRaw(t, s.BrokerAddr())
	pull := map[string]string{
		"consumerGroup": "g", "topic": "t", "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "32", "sysFlag": "2", "suspendTimeoutMillis": "20000",
	}
	// Nothing stored: held for the long-poll timeout, then NOT_FOUND.
	start := time.Now()
	r := c.call(CodePullMessage, pull, nil)
	require.Equal(t, int16(ResPullNotFound), r.Code)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	require.Equal(t, "0", r.ExtFields["nextBeginOffset"])

	// A held pull does not block other requests on the same connection,
	// and a send wakes it.
	pullOp := c.send(CodePullMessage, pull, nil)
	hbOp := c.send(CodeHeartbeat, nil, []byte(`{"clientID":"x@y"}`))
	first := c.read()
	require.Equal(t, hbOp, first.Opaque, "the heartbeat is answered while the pull is held")
	send := dialRaw(t, s.BrokerAddr())
	sr := send.call(CodeSendMessage, map[string]string{
		"producerGroup": "p", "topic": "t", "queueId": "0", "sysFlag": "0",
		"properties": "TAGS\x01A\x02KEYS\x01k1 k2\x02",
	}, []byte("body"))
	require.Equal(t, int16(ResSuccess), sr.Code)
	require.Len(t, sr.ExtFields["msgId"], 32)
	got := c.read()
	require.Equal(t, pullOp, got.Opaque)
	require.Equal(t, int16(ResSuccess), got.Code)
	require.Equal(t, "1", got.ExtFields["nextBeginOffset"])
	require.NotEmpty(t, got.Body)

	// Offsets beyond the end are OFFSET_MOVED.
	pull["queueOffset"] = "5"
	r = c.call(CodePullMessage, pull, nil)
	require.Equal(t, int16(ResPullOffsetMoved), r.Code)
	require.Equal(t, "1", r.ExtFields["nextBeginOffset"])

	// Max offset and search by timestamp.
	r = c.call(CodeGetMaxOffset, map[string]string{"topic": "t", "queueId": "0"}, nil)
	require.Equal(t, "1", r.ExtFields["offset"])
	now := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	r = c.call(CodeSearchOffsetByTimestamp, map[string]string{"topic": "t", "queueId": "0", "timestamp": now}, nil)
	require.Equal(t, "1", r.ExtFields["offset"])
	r = c.call(CodeSearchOffsetByTimestamp, map[string]string{"topic": "t", "queueId": "0", "timestamp": "0"}, nil)
	require.Equal(t, "0", r.ExtFields["offset"])

	m := s.Messages("t")
	require.Len(t, m, 1)
	require.Equal(t, "A", m[0].Tag)
	require.Equal(t, []string{"k1", "k2"}, m[0].Keys)
}

func TestRawStopWakesHeldPull(t *testing.T) {
	t.Parallel()
	s := startRaw(t, WithTopic("t", 1), WithLongPollTimeout(time.Minute))
	c := dialRaw(t, s.BrokerAddr())
	op := c.send(CodePullMessage, map[string]string{
		"consumerGroup": "g", "topic": "t", "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "32", "sysFlag": "2", "suspendTimeoutMillis": "60000",
	}, nil)
	require.Eventually(t, func() bool { return s.Requests(CodePullMessage) == 1 }, 5*time.Second, 5*time.Millisecond)
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	// The held pull is answered before the connection closes.
	r := c.read()
	require.Equal(t, op, r.Opaque)
	require.Equal(t, int16(ResServiceNotAvailable), r.Code)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for a held pull")
	}
	require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := readCommand(c.nc)
	require.Error(t, err, "the connection is closed")
}

func TestRawLockBatch(t *testing.T) {
	t.Parallel()
	s := startRaw(t)
	c := dialRaw(t, s.BrokerAddr())
	body := []byte(`{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"t","brokerName":"broker-a","queueId":1}]}`)
	r := c.call(CodeLockBatchMQ, nil, body)
	require.Equal(t, int16(ResSuccess), r.Code)
	require.JSONEq(t, `{"lockOKMQSet":[{"topic":"t","brokerName":"broker-a","queueId":1}]}`, string(r.Body))
}

func TestStartValidates(t *testing.T) {
	t.Parallel()
	_, err := Start(WithTopic("t", 0))
	require.ErrorContains(t, err, "queues must be at least 1")
	_, err = Start(WithLongPollTimeout(0))
	require.ErrorContains(t, err, "long poll")
}
