package rocketmq

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// clientLogger routes rlog (the client's process-global logging) into
// slog.
type clientLogger struct{ l atomic.Pointer[slog.Logger] }

var bridge = &clientLogger{}

// The bridge is installed when the package is initialized, before any
// client can start: rlog's logger variable is not synchronized, so replacing
// it while a client runs would be a data race. Until a logger is set,
// slog.Default() is used.
func init() { rlog.SetLogger(bridge) }

// installClientLogger sets l as the client's logger if none was set yet.
func installClientLogger(l *slog.Logger) {
	bridge.l.CompareAndSwap(nil, l.With("component", "rocketmq-client"))
}

// SetClientLogger routes the RocketMQ client's logs to l from now on (nil
// means slog.Default()). The client's logger is process-global: it serves
// every RocketMQ target and every other rocketmq-client-go user in the
// process. Without a call, the first target created sets its own logger.
// The client's info and debug messages are logged at slog Debug, its
// warnings at Warn, its errors and fatals (which do not exit) at Error.
// rlog.SetLogLevel has no effect then: the slog handler decides.
func SetClientLogger(l *slog.Logger) {
	if l == nil {
		l = slog.Default()
	}
	bridge.l.Store(l.With("component", "rocketmq-client"))
}

func (c *clientLogger) log(level slog.Level, msg string, fields map[string]any) {
	if msg == "" && len(fields) == 0 {
		return
	}
	l := c.l.Load()
	if l == nil {
		l = slog.Default().With("component", "rocketmq-client")
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := fields[k]
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if s, ok := v.(fmt.Stringer); ok {
			v = s.String()
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// Debug logs the client's debug messages at slog Debug.
func (c *clientLogger) Debug(msg string, fields map[string]any) { c.log(slog.LevelDebug, msg, fields) }

// Info logs the client's (chatty) info messages at slog Debug.
func (c *clientLogger) Info(msg string, fields map[string]any) { c.log(slog.LevelDebug, msg, fields) }

// Warning logs at slog Warn.
func (c *clientLogger) Warning(msg string, fields map[string]any) { c.log(slog.LevelWarn, msg, fields) }

// Error logs at slog Error.
func (c *clientLogger) Error(msg string, fields map[string]any) { c.log(slog.LevelError, msg, fields) }

// Fatal logs at slog Error; unlike rlog's default logger it does not exit.
func (c *clientLogger) Fatal(msg string, fields map[string]any) { c.log(slog.LevelError, msg, fields) }

// Level is ignored (rlog.SetLogLevel): the slog handler decides what is
// logged, and the setting would be process-global.
func (c *clientLogger) Level(string) {}

// OutputPath is ignored: the slog handler decides where logs go.
func (c *clientLogger) OutputPath(string) error { return nil }
