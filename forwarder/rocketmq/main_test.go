package rocketmq_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"go.uber.org/goleak"
)

// clientLogs records what the RocketMQ client logs through the bridge.
var clientLogs = &captureHandler{}

func TestMain(m *testing.M) {
	// rlog's logger is process-global and not synchronized: install the
	// bridge before any client starts.
	rocketmq.SetClientLogger(slog.New(clientLogs))
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}

type captureHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.recs) < 10000 {
		h.recs = append(h.recs, r.Clone())
	}
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

// find returns the first record with msg.
func (h *captureHandler) find(msg string) (slog.Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if r.Message == msg {
			return r, true
		}
	}
	return slog.Record{}, false
}
