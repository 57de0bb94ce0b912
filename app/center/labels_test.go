package center

import (
	"context"
	"net"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Each component's goroutines carry the pprof label naming it, so a CPU
// profile of the process splits by component.
func TestComponentGoroutinesCarryTheirLabel(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), testConfig(t, cluster.ListenAddrs()), Options{Logger: quiet(), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()

	var profile strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&profile, 1))
	for _, comp := range []string{"forwarder", "verifier", "ingest", "retention", "trends"} {
		require.Contains(t, profile.String(), `"`+ComponentLabel+`":"`+comp+`"`, "a goroutine of %s", comp)
	}
}
