// Package startstop is the one life every background part of the center
// shares (ingest, verifier, forwarder, retention, store gauges, the control
// topic watch). A part embeds Base, implements its Start(ctx) by calling
// Base.StartFunc with its synchronous setup, and gets Stop(ctx) from Base.
//
// The semantics, the same for every part:
//
//   - Start(ctx) returns once the synchronous setup is done (building
//     clients and the like); the work runs in goroutines owned by the part.
//     Starting a started part does nothing and returns nil. A failed setup
//     leaves the part as it was: Start may be tried again.
//   - Run.Ctx ends when Stop is called or Start's ctx ends: take no new
//     work. Run.Work outlives Start's ctx and ends only when a Stop's ctx
//     ends before the part is done: abandon the work in hand.
//   - Stop(ctx) asks the part to stop and waits until its goroutines are
//     gone. If ctx ends first, Run.Work is cancelled (with ctx's error as
//     its cause) and Stop still waits for the goroutines, then returns what
//     the part's run returned. Stop before Start is safe (and refuses any
//     later Start); Stop twice, or concurrently, is safe: every call waits
//     and returns the same result.
//   - A part is not restarted: Start after Stop returns ErrStopped.
//
// River's rivershared/startstop is the model; unlike it, a stop here has two
// phases (finish the work in hand, and abandon it once Stop's ctx ends),
// because ingest and the forwarder drain on a graceful stop.
//
// Loop is Base with a periodic function, for the small parts that do one
// thing every interval.
package startstop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrStopped is returned by Start after Stop: a part is not restarted.
var ErrStopped = errors.New("stopped: a stopped part cannot be started again")

// Run is what a started part is given.
type Run struct {
	// Ctx ends when Stop is called or Start's context ends: take no new
	// work.
	Ctx context.Context
	// Work is for the work in hand (store writes, sends, commits): it
	// carries Start's context's values but not its end, and it ends only
	// when a Stop's context ends before the part is done (its cause is that
	// context's error), or after the part's run returned.
	Work context.Context
	// Stopping is closed when Stop is called (not when Start's context
	// ends).
	Stopping <-chan struct{}
}

// Base is the embeddable start/stop state. The zero value is ready to use;
// it must not be copied after first use.
type Base struct {
	mu       sync.Mutex
	started  bool
	stopping chan struct{} // closed by the first Stop
	done     chan struct{} // closed when the run returned
	err      error         // the run's result, set before done is closed

	cancelRun  context.CancelFunc
	cancelWork context.CancelCauseFunc

	stopped atomic.Bool
}

// lazy creates the channels; b.mu must be held.
func (b *Base) lazy() {
	if b.stopping == nil {
		b.stopping = make(chan struct{})
		b.done = make(chan struct{})
	}
}

// StartFunc starts the part: it calls setup with the run's contexts,
// synchronously and under the part's lock, and runs what setup returns in a
// goroutine that the part owns; Stop waits for it and returns its error.
// setup starts any other goroutines the part needs and makes run wait for
// them. If setup fails, its error is returned and the part stays unstarted.
// On a started part StartFunc returns nil without calling setup; on a
// stopped one it returns ErrStopped.
func (b *Base) StartFunc(ctx context.Context, setup func(r Run) (run func() error, err error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lazy()
	if b.stopped.Load() {
		return ErrStopped
	}
	if b.started {
		return nil
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	run, err := setup(Run{Ctx: runCtx, Work: work, Stopping: b.stopping})
	if err != nil {
		cancelRun()
		cancelWork(err)
		return err
	}
	b.started = true
	b.cancelRun, b.cancelWork = cancelRun, cancelWork
	go func() {
		var err error
		defer func() {
			cancelRun()
			cancelWork(context.Canceled)
			b.err = err
			close(b.done)
		}()
		err = run()
	}()
	return nil
}

// Stop asks the part to stop and waits until its goroutines are gone. When
// ctx ends first, the work in hand is abandoned (Run.Work ends) and Stop
// still waits for the goroutines. It returns the part's run result (nil
// when the part was never started).
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	b.lazy()
	if !b.stopped.Swap(true) {
		close(b.stopping)
	}
	started, done, cancelRun, cancelWork := b.started, b.done, b.cancelRun, b.cancelWork
	b.mu.Unlock()
	if !started {
		return nil
	}
	cancelRun()
	select {
	case <-done:
	case <-ctx.Done():
		cancelWork(ctx.Err())
		<-done
	}
	return b.err
}

// Stopping tells whether Stop was called (the part takes nothing new).
func (b *Base) Stopping() bool { return b.stopped.Load() }

// Started tells whether the part was started (it may be stopped since).
func (b *Base) Started() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}
