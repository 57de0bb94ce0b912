// Package lifecycle has the one background-loop shape the center's small
// periodic components share: the work runs every interval until stopped,
// with the start/stop semantics of internal/startstop.
package lifecycle

import (
	"context"
	"time"

	"github.com/eventcenter/eventcenter/internal/startstop"
)

// Loop runs a function periodically in one owned goroutine.
type Loop struct {
	startstop.Base
	interval time.Duration
	run      func(ctx context.Context)
}

// NewLoop returns a loop that calls run every interval (and once at start).
func NewLoop(interval time.Duration, run func(ctx context.Context)) *Loop {
	return &Loop{interval: interval, run: run}
}

// Start starts the goroutine; it returns at once (see startstop.Base).
func (l *Loop) Start(ctx context.Context) error {
	return l.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		return func() error {
			t := time.NewTicker(l.interval)
			defer t.Stop()
			for {
				l.run(r.Ctx)
				select {
				case <-r.Ctx.Done():
					return nil
				case <-t.C:
				}
			}
		}, nil
	})
}
