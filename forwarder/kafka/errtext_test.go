package kafka_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
)

// A send to a dead port names the target and its brokers and says that
// nothing answered, not only "context deadline exceeded".
func TestDeadBrokerErrorNamesTargetAndBrokers(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := l.Addr().String()
	require.NoError(t, l.Close())
	tg, err := kafka.New(kafka.Config{Name: "orders-kafka", Brokers: []string{dead}, Logger: quiet})
	require.NoError(t, err)
	defer tg.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res := tg.Send(ctx, records("biz", 1))
	require.ErrorIs(t, res[0].Err, context.DeadlineExceeded)
	require.ErrorContains(t, res[0].Err, `kafka target "orders-kafka" (brokers `+dead+`, no acknowledgement within the send timeout: are they up and reachable?): `)
	require.ErrorContains(t, res[0].Err, `topic "biz"`)
	require.False(t, forwarder.IsPermanent(res[0].Err))
}
