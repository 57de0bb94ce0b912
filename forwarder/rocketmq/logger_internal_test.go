package rocketmq

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientLoggerLevels(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := &clientLogger{}
	c.l.Store(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	c.Level("error") // ignored: slog decides
	c.Info("dropped-info", nil)
	c.Debug("dropped-debug", nil)
	c.Warning("kept-warn", map[string]any{"k": 1})
	c.Fatal("kept-fatal", nil) // logs, does not exit
	c.Info("", nil)            // nothing to say
	out := buf.String()
	require.NotContains(t, out, "dropped")
	require.Contains(t, out, "level=WARN msg=kept-warn k=1")
	require.Contains(t, out, "level=ERROR msg=kept-fatal")
	require.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("\n")))
	require.NoError(t, c.OutputPath("/nonexistent"))
}
