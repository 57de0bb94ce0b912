package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSettle is how long a fetch must be outstanding, without a failure,
// to count as consuming when the broker has not answered one yet: on an
// idle control topic the broker holds a fetch for the fetch max wait (5s
// by default) before it answers, and records that arrive meanwhile are
// answered at once, so a held fetch is consumption. A broker that drops
// the connection fails the fetch well within this.
const fetchSettle = time.Second

// health tracks whether the consumer is consuming: whether, since the last
// failed connection to a broker, a fetch was answered or has been held by
// the broker for fetchSettle (or, for an instance that owns no partitions
// and so fetches nothing, the group coordinator answered). Being in the
// group is not enough: after a broker restart the client keeps its
// assignment until it notices, and then needs seconds to reconnect and
// fetch again, while records wait.
//
// It is the consumer client's hook (kgo.WithHooks).
type health struct {
	mu      sync.Mutex
	seq     uint64 // orders the events below
	errSeq  uint64 // the last connection failure
	err     error  // what it was
	errAt   time.Time
	fetched uint64 // the last answered fetch
	group   uint64 // the last answer of the group coordinator
	// sent is the first fetch written since the last failure, at sentAt.
	sent   uint64
	sentAt time.Time
}

var (
	_ kgo.HookBrokerConnect = (*health)(nil)
	_ kgo.HookBrokerRead    = (*health)(nil)
	_ kgo.HookBrokerWrite   = (*health)(nil)
)

// OnBrokerConnect records a failed dial.
func (h *health) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.failed(meta, err)
	}
}

// OnBrokerWrite records a failed request write, or the first fetch sent
// since the last failure.
func (h *health) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.failed(meta, err)
		return
	}
	if key == kmsg.Fetch.Int16() {
		h.mu.Lock()
		if h.sent <= h.errSeq {
			h.seq++
			h.sent, h.sentAt = h.seq, time.Now()
		}
		h.mu.Unlock()
	}
}

// OnBrokerRead records a failed response read, or an answered fetch or
// group request.
func (h *health) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.failed(meta, err)
		return
	}
	switch key {
	case kmsg.Fetch.Int16():
		h.mu.Lock()
		h.seq++
		h.fetched = h.seq
		h.mu.Unlock()
	case kmsg.Heartbeat.Int16(), kmsg.SyncGroup.Int16(), kmsg.JoinGroup.Int16():
		h.mu.Lock()
		h.seq++
		h.group = h.seq
		h.mu.Unlock()
	}
}

func (h *health) failed(meta kgo.BrokerMetadata, err error) {
	// A request the client gave up itself (a rebalance, Stop) says
	// nothing about the broker.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	h.errSeq = h.seq
	h.err = fmt.Errorf("broker %s: %w", net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), err)
	h.errAt = time.Now()
}

// consuming reports whether records are being consumed; owning tells
// whether the consumer owns partitions (and so must have fetched). When
// not, why says what it waits for, and cause is the connection failure
// since which it waits (nil if none: it never got there yet).
func (h *health) consuming(owning bool) (ok bool, why string, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	last, what := h.group, "the group coordinator to answer"
	if owning {
		last, what = h.fetched, "a fetch of the control topic to succeed"
		if h.sent > h.errSeq && time.Since(h.sentAt) >= fetchSettle {
			return true, "", nil
		}
	}
	if last > h.errSeq && last > 0 {
		return true, "", nil
	}
	if h.err == nil || last > h.errSeq {
		return false, "waiting for " + what, nil
	}
	return false, fmt.Sprintf("waiting for %s since a broker connection failed %s ago", what, time.Since(h.errAt).Round(time.Second)), h.err
}
