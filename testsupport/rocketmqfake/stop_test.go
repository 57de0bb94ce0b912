package rocketmqfake

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRawPullWhileStoppingIsAnswered: a pull that arrives after Stop began
// (here: while Stop waits for a send whose hook blocks) is answered
// SERVICE_NOT_AVAILABLE rather than dropped, so the real client does not
// wait for its 30 s pull timeout; the send is not answered.
func TestRawPullWhileStoppingIsAnswered(t *testing.T) {
	t.Parallel()
	s := startRaw(t, WithTopic("t", 1))
	entered := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the server's Close, even on failure
	s.SetSendHook(func(string, Message) (int, string, time.Duration) {
		close(entered)
		<-release
		return ResSuccess, "", 0
	})
	c := dialRaw(t, s.BrokerAddr())
	c.send(CodeSendMessage, map[string]string{"producerGroup": "p", "topic": "t", "queueId": "0", "sysFlag": "0"}, []byte("body"))
	<-entered
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()

	pull := map[string]string{
		"consumerGroup": "g", "topic": "t", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "0",
	}
	// Until Stop has begun, a pull without suspend finds nothing (19).
	var code int16
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		op := c.send(CodePullMessage, pull, nil)
		r := c.read()
		require.Equal(t, op, r.Opaque)
		code = r.Code
		if code != ResPullNotFound {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling until Stop has begun: nothing to wait on
	}
	require.Equal(t, int16(ResServiceNotAvailable), code, "a pull while stopping is answered")
	select {
	case <-done:
		t.Fatal("Stop returned while a send handler was still running")
	default:
	}
	unblock()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return after the send finished")
	}
}
