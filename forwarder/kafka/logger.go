package kafka

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// ClientLogger is how the center's franz-go clients log into its slog
// logger (franz-go's kslog): their warnings and errors as they are, their
// info lines one level lower, at debug. Those lines are the client's own
// housekeeping (metadata loads, "received client metrics subscription",
// producer ids, group joins), and at info they outnumbered the center's
// own events many times over; --log-level debug shows them again.
func ClientLogger(l *slog.Logger) kgo.Logger {
	return kslog.New(slog.New(infoAsDebug{l.Handler()}))
}

// infoAsDebug hands a record of level info (or between info and warn) to
// its handler as debug.
type infoAsDebug struct{ slog.Handler }

func lower(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (h infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, lower(l))
}

func (h infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return infoAsDebug{h.Handler.WithAttrs(as)}
}

func (h infoAsDebug) WithGroup(name string) slog.Handler {
	return infoAsDebug{h.Handler.WithGroup(name)}
}
