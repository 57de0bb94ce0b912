package startstop_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// part is the smallest background part: one goroutine that runs until its
// run context ends, then waits for its work context if told to linger.
type part struct {
	startstop.Base
	starts  atomic.Int32
	running atomic.Int32
	linger  bool // after Ctx ends, wait for Work to end (a drain that never finishes)
	failing error
}

func (p *part) Start(ctx context.Context) error {
	return p.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		if p.failing != nil {
			return nil, p.failing
		}
		p.starts.Add(1)
		if p.running.Add(1) != 1 {
			panic("two runs at once")
		}
		return func() error {
			defer p.running.Add(-1)
			<-r.Ctx.Done()
			if p.linger {
				<-r.Work.Done()
				return context.Cause(r.Work)
			}
			return nil
		}, nil
	})
}

func TestSemantics(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(*testing.T) startstoptest.Service { return &part{} })
}

// TestStress starts and stops one part from many goroutines at once, many
// times over: never two runs, Stop returns only once the run is gone.
func TestStress(t *testing.T) {
	t.Parallel()
	for range 200 {
		p := &part{}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				if i%2 == 0 {
					if err := p.Start(t.Context()); err != nil {
						require.ErrorIs(t, err, startstop.ErrStopped)
					}
					return
				}
				require.NoError(t, p.Stop(t.Context()))
				require.Zero(t, p.running.Load(), "Stop returned with the run alive")
			})
		}
		wg.Wait()
		require.NoError(t, p.Stop(t.Context()))
		require.Zero(t, p.running.Load())
		require.LessOrEqual(t, p.starts.Load(), int32(1))
	}
}

func TestStopCtxEndsAbandonsWork(t *testing.T) {
	t.Parallel()
	p := &part{linger: true}
	require.NoError(t, p.Start(t.Context()))
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	err := p.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the run saw Stop's ctx error as Work's cause")
	require.Zero(t, p.running.Load())
	require.ErrorIs(t, p.Stop(t.Context()), context.DeadlineExceeded, "a later Stop returns the same result")
}

func TestFailedSetupLeavesUnstarted(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	p := &part{failing: boom}
	require.ErrorIs(t, p.Start(t.Context()), boom)
	require.False(t, p.Started())
	p.failing = nil
	require.NoError(t, p.Start(t.Context()), "Start may be tried again")
	require.True(t, p.Started())
	require.NoError(t, p.Stop(t.Context()))
	require.True(t, p.Stopping())
}

func TestStoppingClosedByStopOnly(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	var stopping <-chan struct{}
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, b.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		stopping = r.Stopping
		return func() error { <-r.Stopping; return nil }, nil
	}))
	cancel()
	select {
	case <-stopping:
		t.Fatal("Stopping closed by Start's ctx")
	default:
	}
	require.NoError(t, b.Stop(t.Context()))
	<-stopping
}
