package shutdown

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The first SIGTERM cancels the context; the watcher ends with parent.
func TestFirstSignalCancels(t *testing.T) {
	parent, stop := context.WithCancel(t.Context())
	defer stop()
	ctx, cancel := SignalContext(parent, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer cancel()
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	require.ErrorIs(t, ctx.Err(), context.Canceled)
}

// Cancelled before any signal: the watcher ends and the context is done.
func TestCancelStopsListening(t *testing.T) {
	ctx, cancel := SignalContext(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	cancel()
	<-ctx.Done()
}
