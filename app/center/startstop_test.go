package center

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
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

// ingest.send_lease no longer sets a lease of its own: the fast path leases
// for forward.lease, and a send_lease set to something else is reported.
func TestSendLeaseIsDeprecated(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		lease time.Duration
		warn  bool
	}{
		"default":       {config.Default().Ingest.SendLease, false},
		"forward.lease": {config.Default().Forward.Lease, false},
		"other":         {10 * time.Second, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var log logBuffer
			cfg := testConfig(t, []string{"127.0.0.1:1"})
			cfg.Ingest.SendLease = tc.lease
			c, err := New(t.Context(), cfg, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			require.NoError(t, err)
			require.NoError(t, c.Stop(t.Context()))
			require.Equal(t, tc.warn, strings.Contains(log.String(), "ingest.send_lease is deprecated and ignored"), log.String())
		})
	}
}
