package center

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/internal/config"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
)

// The control-topic watch follows the shared start/stop semantics (it used
// to leak a goroutine on a second Start and to start after Stop).
func TestTopicWatchStartStop(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(*testing.T) startstoptest.Service {
		fa := &fakeAdmin{listErr: errors.New("unreachable")}
		return newTopicWatch(config.Default().Kafka, fa, time.Hour, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	})
}
