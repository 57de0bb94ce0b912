package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

// The ingester follows the shared start/stop semantics.
func TestIngesterStartStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	startstoptest.Exercise(t, func(t *testing.T) startstoptest.Service {
		in, err := New(e.config(), newMemStore(), NewOwnership())
		require.NoError(t, err)
		return in
	})
}
