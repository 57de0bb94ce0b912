package rocketmq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// SYSTEM_BUSY (flow control) is the broker asking to slow down: the error
// is marked Throttled, not permanent.
func TestSystemBusyIsThrottled(t *testing.T) {
	t.Parallel()
	s := startFake(t, rocketmqfake.WithTopic("t", 1))
	s.SetSendHook(func(string, rocketmqfake.Message) (int, string, time.Duration) {
		return rocketmqfake.ResSystemBusy, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while", 0
	})
	tg := newTarget(t, s)
	res := tg.Send(t.Context(), []forwarder.Record{rec("t", "1:a")})
	require.Error(t, res[0].Err)
	require.True(t, forwarder.IsThrottled(res[0].Err), "%v", res[0].Err)
	require.False(t, forwarder.IsPermanent(res[0].Err))
	require.ErrorContains(t, res[0].Err, "broker busy")
}
