package startstop_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

func TestLoopStartStop(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(*testing.T) startstoptest.Service {
		return startstop.NewLoop(time.Hour, func(context.Context) {})
	})
}
