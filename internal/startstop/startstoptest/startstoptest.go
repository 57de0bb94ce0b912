// Package startstoptest checks that a background part follows the shared
// start/stop semantics of package startstop. Every part runs Exercise in
// its own tests.
package startstoptest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/startstop"
)

// Service is a background part.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Exercise checks the start/stop semantics on fresh parts made by newPart
// (each call must return a new, unstarted part whose resources the test
// cleans up): Start twice, Stop twice, Stop before Start, no restart, and
// concurrent Starts and Stops. The package's goleak check proves the
// goroutines are gone.
func Exercise(t *testing.T, newPart func(t *testing.T) Service) {
	t.Helper()
	t.Run("StartTwiceStopTwice", func(t *testing.T) {
		t.Parallel()
		p := newPart(t)
		require.NoError(t, p.Start(t.Context()))
		require.NoError(t, p.Start(t.Context()), "Start while started is a no-op")
		require.NoError(t, p.Stop(t.Context()))
		require.NoError(t, p.Stop(t.Context()), "Stop twice")
		require.ErrorIs(t, p.Start(t.Context()), startstop.ErrStopped, "no restart after Stop")
	})
	t.Run("StopBeforeStart", func(t *testing.T) {
		t.Parallel()
		p := newPart(t)
		require.NoError(t, p.Stop(t.Context()))
		require.ErrorIs(t, p.Start(t.Context()), startstop.ErrStopped)
		require.NoError(t, p.Stop(t.Context()))
	})
	t.Run("StartCtxEnds", func(t *testing.T) {
		t.Parallel()
		p := newPart(t)
		ctx, cancel := context.WithCancel(t.Context())
		require.NoError(t, p.Start(ctx))
		cancel()
		require.NoError(t, p.Stop(t.Context()))
	})
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		p := newPart(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				err := p.Start(t.Context())
				if err != nil {
					require.ErrorIs(t, err, startstop.ErrStopped)
				}
			})
			wg.Go(func() { require.NoError(t, p.Stop(t.Context())) })
		}
		wg.Wait()
		require.NoError(t, p.Stop(t.Context()))
		require.ErrorIs(t, p.Start(t.Context()), startstop.ErrStopped)
	})
}
