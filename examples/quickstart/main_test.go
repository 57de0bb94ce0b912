package main

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Without a center (nothing on the broker port) the quickstart fails
// within its timeout, asking whether eventcenter dev runs, instead of
// waiting forever.
func TestNoCenterFailsWithinTheTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := l.Addr().String()
	require.NoError(t, l.Close())

	start := time.Now()
	err = run(t.Context(), dead, "127.0.0.1:0", 3*time.Second)
	require.ErrorContains(t, err, "no Kafka broker answers at "+dead)
	require.ErrorContains(t, err, "is `eventcenter dev` running?")
	require.Less(t, time.Since(start), 4*time.Second)
}

// A broker without a center: the PREPARE and COMMIT are written, nothing
// is forwarded, and the quickstart gives up at its timeout with the hint.
func TestBrokerWithoutCenterFailsWithinTheTimeout(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.SeedTopics(1, "eventcenter.control"))
	require.NoError(t, err)
	defer c.Close()

	start := time.Now()
	err = run(t.Context(), c.ListenAddrs()[0], "127.0.0.1:0", 3*time.Second)
	require.ErrorContains(t, err, "is `eventcenter dev` running?")
	require.Less(t, time.Since(start), 5*time.Second)
}
