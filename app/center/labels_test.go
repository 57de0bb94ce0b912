package center

import (
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Options.StartComponent runs every component's Start, named; what it
// sets on the context (a pprof label, as the bench does) reaches the
// component's goroutines.
func TestStartComponentRunsEachComponentsStart(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the center stops (cleanups run last first)
	// A label of this test's own, so that other tests' centers (which
	// run in parallel without it) cannot make it pass.
	label := "component-" + t.Name()
	var mu sync.Mutex
	var started []string
	opts := Options{Logger: quiet(), StartComponent: func(ctx context.Context, component string, start func(context.Context) error) error {
		mu.Lock()
		started = append(started, component)
		mu.Unlock()
		var err error
		pprof.Do(ctx, pprof.Labels(label, component), func(ctx context.Context) { err = start(ctx) })
		return err
	}}
	startCenter(t, testConfig(t, cluster.ListenAddrs()), opts)

	mu.Lock()
	require.Equal(t, []string{"secrets", "forwarder", "resolver", "verifier", "topics", "ingest", "retention", "gauges", "level", "trends"}, started)
	mu.Unlock()
	var profile strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&profile, 1))
	for _, comp := range []string{"forwarder", "verifier", "ingest", "retention", "trends"} {
		require.Contains(t, profile.String(), `"`+label+`":"`+comp+`"`, "a goroutine of %s", comp)
	}
}
