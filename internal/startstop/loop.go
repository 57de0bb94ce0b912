package startstop

import (
	"context"
	"time"
)

// Loop is the one background-loop shape the center's small periodic
// components share (retention, store gauges, trends, the cluster level
// watch): it calls a function every interval in one owned goroutine until
// stopped, with the start/stop semantics of Base.
type Loop struct {
	Base
	interval time.Duration
	run      func(ctx context.Context)
}

// NewLoop returns a loop that calls run every interval (and once at start).
func NewLoop(interval time.Duration, run func(ctx context.Context)) *Loop {
	return &Loop{interval: interval, run: run}
}

// Start starts the goroutine; it returns at once (see Base).
func (l *Loop) Start(ctx context.Context) error {
	return l.StartFunc(ctx, func(r Run) (func() error, error) {
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
