package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// MessageRef names a message.
type MessageRef struct {
	BizID string
	Key   string
}

// Refs returns the distinct messages the changes touch, in first-seen order:
// what a driver loads (and locks) before calling Fold.
func Refs(changes []Change) []MessageRef {
	seen := make(map[MessageRef]struct{}, len(changes))
	refs := make([]MessageRef, 0, len(changes))
	for _, c := range changes {
		r := MessageRef{c.BizID, c.Key}
		if _, ok := seen[r]; ok {
			continue
		}
		seen[r] = struct{}{}
		refs = append(refs, r)
	}
	return refs
}

// Folded is what a driver writes back after Fold.
type Folded struct {
	// Inserts are new rows (ID 0), Updates changed existing rows (ID set).
	// A row appears once, in its final state.
	Inserts []*state.Message
	Updates []*state.Message
	// Outcomes has one entry per change.
	Outcomes []ChangeOutcome
	// Sendable are the rows (pointers into Inserts/Updates) that became due
	// for sending; the driver leases them and returns them.
	Sendable []*state.Message
	// Forwarded are the rows (pointers into Inserts/Updates) that
	// ApplyRequest.Forward sent; see Folded.ForwardFirst.
	Forwarded []*state.Message
	// Audits are the operator actions to record.
	Audits []AuditEntry
	// Positions has, for each row with an order key (a pointer into
	// Inserts/Updates) made sendable by a change from a control record
	// (Change.HasOffset), that record's place (the last such change of
	// the row in the batch). Only ordered messages are written ahead, and
	// only they need it.
	Positions map[*state.Message]state.ControlPos
	// Ahead are the rows (pointers into Inserts/Updates) written sent
	// before their send (ApplyRequest.WriteAhead), to send after the
	// commit.
	Ahead []*state.Message
}

// Fold applies changes in order to the loaded rows (keyed by MessageRef;
// missing means no row) through state.Apply. It is the one place the state
// machine meets the store, shared by every driver.
func Fold(loaded map[MessageRef]*state.Message, changes []Change) Folded {
	var f Folded
	f.Outcomes = make([]ChangeOutcome, len(changes))
	rows := make(map[MessageRef]*state.Message, len(changes))
	changed := make(map[MessageRef]bool, len(changes))
	sendable := make(map[MessageRef]bool)
	var order []MessageRef
	for i, c := range changes {
		r := MessageRef{c.BizID, c.Key}
		cur, ok := rows[r]
		if !ok {
			if l := loaded[r]; l != nil {
				cp := *l
				cur = &cp
			} else {
				cur = &state.Message{BizID: c.BizID, Key: c.Key, Partition: c.Partition}
			}
			rows[r] = cur
			order = append(order, r)
		}
		if c.LeaseToken != 0 && cur.LeaseToken != c.LeaseToken {
			f.Outcomes[i] = ChangeOutcome{Stale: true}
			continue
		}
		before := cur.Status
		next, out, err := state.Apply(*cur, c.Event)
		if err != nil {
			if errors.Is(err, state.ErrNoMessage) {
				// Operator action on a missing message: callers test for
				// ErrNotFound, as for Get.
				err = fmt.Errorf("%w: %w", ErrNotFound, err)
			}
			f.Outcomes[i] = ChangeOutcome{Err: fmt.Errorf("%s:%s: %w", c.BizID, c.Key, err)}
			continue
		}
		f.Outcomes[i] = ChangeOutcome{Outcome: out}
		if out.Effect == state.NoOp {
			continue
		}
		ClearStaleError(&next, c.Event.Kind, out)
		*cur = next
		changed[r] = true
		if out.Sendable {
			sendable[r] = true
			if c.HasOffset && cur.OrderKey != "" {
				if f.Positions == nil {
					f.Positions = map[*state.Message]state.ControlPos{}
				}
				f.Positions[cur] = state.ControlPos{Partition: c.Partition, Offset: c.Offset, Valid: true}
			}
		}
		if c.Audit != nil {
			f.Audits = append(f.Audits, AuditEntry{
				BizID: c.BizID, Key: c.Key, Action: c.Event.Kind.String(),
				Who: c.Audit.Who, Reason: c.Audit.Reason, At: c.Event.At,
				Before: before.String(), After: cur.Status.String(),
			})
		}
	}
	for _, r := range order {
		if !changed[r] {
			continue
		}
		m := rows[r]
		if m.ID == 0 {
			f.Inserts = append(f.Inserts, m)
		} else {
			f.Updates = append(f.Updates, m)
		}
		// A later change in the batch may have made it not sendable again
		// (a conflict cannot, but a send result or operator action could).
		if sendable[r] && m.Sendable() {
			f.Sendable = append(f.Sendable, m)
		}
	}
	return f
}

// ForwardFirst calls forward (if set) with the sendable rows and applies
// state.KindSent, at now, to those it reports sent: they move from
// Sendable to Forwarded and are written sent. Those it reports held leave
// Sendable and are written due at now, not leased. The rest stay sendable.
//
// With ordered (per-key order on), a message with an order sequence is not
// offered: an inline send happens before the transaction commits, and a
// transaction that fails after it (a lost connection, a kill, a retried
// insert race) takes the sequence back, so another message of the key
// could then be numbered before one already sent. Such messages are
// written leased and sent once their sequence is durable.
func (f *Folded) ForwardFirst(ctx context.Context, forward ForwardFunc, now time.Time, ordered bool) {
	f.Forwarded = nil
	if forward == nil || len(f.Sendable) == 0 {
		return
	}
	offered := make([]*state.Message, 0, len(f.Sendable))
	for _, m := range f.Sendable {
		if !ordered || m.OrderSeq == 0 {
			offered = append(offered, m)
		}
	}
	if len(offered) == 0 {
		return
	}
	msgs := make([]state.Message, len(offered))
	for i, m := range offered {
		msgs[i] = *m
	}
	results := forward(ctx, msgs)
	// offered is f.Sendable in order, less the messages not offered: the
	// i-th offered message has the i-th result (a shorter answer leaves
	// the rest unsent).
	ri := 0
	keep := f.Sendable[:0]
	for _, m := range f.Sendable {
		var r Forwarded
		if ri < len(offered) && offered[ri] == m {
			if ri < len(results) {
				r = results[ri]
			}
			ri++
		}
		if r.Held && !r.Sent {
			m.SendNextAt, m.LeaseToken = now, 0 // held: due now, not leased
			continue
		}
		if r.Sent {
			if next, out, err := state.Apply(*m, state.Event{Kind: state.KindSent, At: now, Ref: r.Ref}); err == nil && out.Effect == state.Changed {
				ClearStaleError(&next, state.KindSent, out)
				*m = next
				f.Forwarded = append(f.Forwarded, m)
				continue
			}
		}
		keep = append(keep, m)
	}
	clear(f.Sendable[len(keep):])
	f.Sendable = keep
}

// ClearStaleError applies the last-error rule to m, just changed by an
// event of kind k with outcome out: LastError tells why the latest attempt
// failed, so a message that moved on (decided, sent, re-opened or retried
// by an operator: any change that is not a failure) keeps no stale error
// for `admin list` and the API to show. It stays after a failure
// (KindCheckUnknown, KindCheckParked, KindSendFailed set it), after a
// deferral (KindCheckDeferred, KindSendDeferred: nothing was tried), and
// after a conflict (the row's state did not move). The store's bulk sent
// mark (MarkSent) clears it as KindSent does here.
func ClearStaleError(m *state.Message, k state.Kind, out state.Outcome) {
	if out.Effect != state.Changed {
		return
	}
	switch k {
	case state.KindCheckUnknown, state.KindCheckParked, state.KindSendFailed,
		state.KindCheckDeferred, state.KindSendDeferred:
		return
	}
	m.LastError = ""
}
