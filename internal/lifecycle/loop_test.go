package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/lifecycle"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoopStartStop(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(*testing.T) startstoptest.Service {
		return lifecycle.NewLoop(time.Hour, func(context.Context) {})
	})
}
