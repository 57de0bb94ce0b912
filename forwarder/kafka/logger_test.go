package kafka

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// The Kafka client's info lines go to debug; its warnings and errors stay.
func TestClientLoggerLowersInfoToDebug(t *testing.T) {
	var atInfo, atDebug logbuf.Buffer
	info := ClientLogger(slog.New(slog.NewTextHandler(&atInfo, &slog.HandlerOptions{Level: slog.LevelInfo})))
	debug := ClientLogger(slog.New(slog.NewTextHandler(&atDebug, &slog.HandlerOptions{Level: slog.LevelDebug})))

	require.Equal(t, kgo.LogLevelWarn, info.Level(), "at info the client need not even format its info lines")
	require.Equal(t, kgo.LogLevelDebug, debug.Level())
	for _, l := range []kgo.Logger{info, debug} {
		l.Log(kgo.LogLevelInfo, "received client metrics subscription", "broker", 1)
		l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "broker", 1)
		l.Log(kgo.LogLevelError, "fatal produce error")
	}
	require.NotContains(t, atInfo.String(), "metrics subscription")
	require.Contains(t, atInfo.String(), `level=WARN msg="unable to open connection to broker"`)
	require.Contains(t, atInfo.String(), `level=ERROR msg="fatal produce error"`)
	require.Contains(t, atDebug.String(), `level=DEBUG msg="received client metrics subscription" broker=1`)
	require.Contains(t, atDebug.String(), `level=WARN msg="unable to open connection to broker"`)
}
