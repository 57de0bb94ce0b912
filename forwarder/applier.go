package forwarder

import (
	"context"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// ApplyStore is the store an Applier wraps.
type ApplyStore interface {
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
}

// Handoff takes messages that just became sendable, leased (the
// Forwarder). It must not block for long.
type Handoff interface {
	Handoff(msgs []state.Message)
}

// Applier is the fast path, the one place that knows it: every part that
// changes messages (ingest, the verifier's check-back answers, operator
// actions) applies through it. Apply sets the send lease on the request and,
// after the store committed, hands the messages that became sendable to the
// forwarder. If the process dies before they are sent, the forwarder's scan
// claims them once the lease runs out.
//
// An Applier of a Forwarder (Forwarder.Applier) first sends them inline:
// inside the store transaction, before the write (store.ApplyRequest.Forward),
// so that those acknowledged are written once, already sent, and only the
// rest is written leased and handed over. If the process dies after such a
// send and before the commit, nothing was written and the caller replays
// the change (ingest has not committed the control records' offsets; a
// check-back is asked again), so the message is forwarded again: at least
// once, as always, with its stable id. Safe for concurrent use.
type Applier struct {
	st     ApplyStore
	to     Handoff
	lease  time.Duration
	inline *Forwarder // nil: no inline sends
	// ordered is the forwarder's per-key order gate (Config.Ordered); nil
	// means off.
	ordered func() bool
	// scan wakes the forwarder's scan (nil: none).
	scan func()
}

// NewApplier returns an Applier over st that hands sendable messages to
// to, leased for lease. With a nil to, nothing is leased or handed off:
// sendable messages are left due for the forwarder's next scan.
func NewApplier(st ApplyStore, to Handoff, lease time.Duration) *Applier {
	if to == nil {
		lease = 0
	}
	return &Applier{st: st, to: to, lease: lease}
}

// Applier returns the fast path into f over st, with f's Lease (the one
// lease setting, forward.lease).
func (f *Forwarder) Applier(st ApplyStore) *Applier {
	a := NewApplier(st, f, f.cfg.Lease)
	a.ordered = f.cfg.Ordered
	a.scan = f.wakeScan
	if f.cfg.InlineTimeout > 0 {
		a.inline = f
	}
	return a
}

// Apply applies req with the send lease set and, once the store committed,
// hands the sendable messages over. The result is the store's: Forwarded
// lists what was sent inline, Sendable what was handed over (when
// HandsOff).
func (a *Applier) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	req.SendLease = a.lease
	req.Ordered = a.ordered != nil && a.ordered()
	if a.inline != nil {
		req.Forward = a.inline.inlineSender(false)
		// Written ahead, sent after the commit, each order key's messages
		// of the batch in one send; a replayed batch also writes back what
		// an earlier try left unconfirmed.
		req.WriteAhead = req.Ordered && a.inline.cfg.WriteAhead()
		req.SendAhead, req.AheadInOrder = a.inline.inlineSender(true), true
	}
	res, err := a.st.Apply(ctx, req)
	if err != nil {
		return res, err
	}
	if len(res.Forwarded) > 0 && a.inline != nil {
		a.inline.recordInline(res.Forwarded)
	}
	if a.inline != nil {
		if res.Ahead > 0 {
			a.inline.met.ahead.WithLabelValues("confirmed").Add(float64(res.Ahead))
		}
		if res.Unconfirmed > 0 {
			a.inline.met.ahead.WithLabelValues("written_back").Add(float64(res.Unconfirmed))
			a.inline.log.Warn("messages written ahead by a batch that did not confirm them were written back to pending and will be sent again",
				"messages", res.Unconfirmed)
		}
	}
	if len(res.Sendable) > 0 && a.to != nil {
		a.to.Handoff(res.Sendable)
	}
	if res.Woken > 0 && a.scan != nil {
		a.scan() // the next messages of keys the batch freed are due
	}
	return res, nil
}

// HandsOff tells whether sendable messages are handed to a forwarder (else
// they wait for its scan).
func (a *Applier) HandsOff() bool { return a.to != nil }

// FastPath returns st with Apply going through the fast path into f: the
// store the center gives ingest, the verifier and the admin API.
func (f *Forwarder) FastPath(st store.Store) store.Store {
	return WithApplier(st, f.Applier(st))
}

// WithApplier returns st with its Apply replaced by a's (a wraps st).
func WithApplier(st store.Store, a *Applier) store.Store {
	return fastStore{Store: st, a: a}
}

// fastStore is a store whose Apply is an Applier's.
type fastStore struct {
	store.Store
	a *Applier
}

func (s fastStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	return s.a.Apply(ctx, req)
}

// HandsOff tells whether sendable messages are handed to a forwarder.
func (s fastStore) HandsOff() bool { return s.a.HandsOff() }

// BlockedKeys passes store.Orderer through to the wrapped store
// (store.ErrOrderUnavailable when it does not keep per-key order).
func (s fastStore) BlockedKeys(ctx context.Context, bizID string, limit int) ([]store.BlockedKey, error) {
	if o, ok := s.Store.(store.Orderer); ok {
		return o.BlockedKeys(ctx, bizID, limit)
	}
	return nil, store.ErrOrderUnavailable
}

// SendBacklog implements store.Backlogger when the store does (the
// fair-share view reads it through the fast path's store); otherwise it
// reports no backlog.
func (s fastStore) SendBacklog(ctx context.Context) ([]store.BizBacklog, error) {
	if b, ok := s.Store.(store.Backlogger); ok {
		return b.SendBacklog(ctx)
	}
	return nil, nil
}
