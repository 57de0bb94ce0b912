// Package shutdown has the commands' signal handling: the first SIGINT or
// SIGTERM cancels the run's context so it stops in order, a second one
// exits the process at once.
package shutdown

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a context cancelled by the first SIGINT/SIGTERM; a
// second one exits the process at once (status 2). Before a signal,
// calling the returned cancel stops listening; after one, parent ending
// does.
func SignalContext(parent context.Context, log *slog.Logger) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			log.Info("shutting down; send the signal again to exit at once", "signal", s.String())
			cancel()
		case <-ctx.Done():
			signal.Stop(sigs)
			return
		}
		select {
		case s := <-sigs:
			log.Error("exiting at once", "signal", s.String())
			os.Exit(2)
		case <-parent.Done(): // the caller is done with it (tests)
			signal.Stop(sigs)
		}
	}()
	return ctx, cancel
}
