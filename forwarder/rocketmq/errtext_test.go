package rocketmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// A send that gets no answer names the target and its name servers and
// says that nothing answered; a permanent error stays permanent.
func TestSendErrorsNameTargetAndNameServers(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("slow", 1))
	s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) { return 0, "", 2 * time.Second })
	tg := newTarget(t, s, func(c *rocketmq.Config) { c.Concurrency = 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	res := tg.Send(ctx, []forwarder.Record{rec("slow", "1:a"), rec("slow", "1:b")})
	for _, r := range res {
		require.ErrorIs(t, r.Err, context.DeadlineExceeded)
		require.ErrorContains(t, r.Err, "(name servers "+s.NameServerAddr()+", no answer within the send timeout: are they up and reachable?): ")
		require.False(t, forwarder.IsPermanent(r.Err))
	}

	res = tg.Send(t.Context(), []forwarder.Record{rec("rmq.out", "1:c")})
	require.ErrorContains(t, res[0].Err, "(name servers "+s.NameServerAddr()+"): rocketmq topic \"rmq.out\" is invalid")
	require.True(t, forwarder.IsPermanent(res[0].Err))
}
