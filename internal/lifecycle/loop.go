// Package lifecycle has the one background-loop shape the center's small
// periodic components share: Start returns at once, Stop waits until the
// goroutine is gone, and the work runs every interval until stopped.
package lifecycle

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Loop runs a function periodically in one owned goroutine.
type Loop struct {
	interval time.Duration
	run      func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewLoop returns a loop that calls run every interval (and once at start).
func NewLoop(interval time.Duration, run func(ctx context.Context)) *Loop {
	return &Loop{interval: interval, run: run}
}

// Start starts the goroutine; it returns at once.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return errors.New("loop already started")
	}
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.interval)
		defer t.Stop()
		for {
			l.run(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop cancels the loop and waits for it (or for ctx).
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
