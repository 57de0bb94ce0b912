package verifier

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

// The verifier follows the shared start/stop semantics (Stop before Start
// used to leave it startable, and a second Start errored).
func TestVerifierStartStop(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(t *testing.T) startstoptest.Service {
		clk := newClock()
		v, err := New(Config{Now: clk.Now, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)},
			newMemStore(clk.Now), ingest.NewOwnership())
		require.NoError(t, err)
		return v
	})
}
