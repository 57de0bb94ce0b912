package state

import (
	"bytes"
	"fmt"
	"time"
)

// Apply returns the message after ev and what it did. cur is the current row;
// a zero Message (Status None) means no row exists, in which case bizID, key
// and partition must already be set on cur by the caller.
//
// Apply is total over envelopes and results (they never fail: at worst they
// are no-ops or conflicts); operator actions fail with ErrWrongState or
// ErrNoMessage when the state does not allow them. The returned message is a
// copy; cur is not modified.
func Apply(cur Message, ev Event) (Message, Outcome, error) {
	m := cur
	if ev.Kind == KindPrepare && ev.Body == nil {
		return cur, Outcome{}, fmt.Errorf("%w: prepare without body", ErrBadEvent)
	}
	if m.Status == None {
		return applyToNone(m, ev)
	}
	if !m.Status.Known() || !m.SendStatus.Known() {
		// Written by a newer version: never sent, failed or changed here.
		if ev.Kind.IsOperator() {
			return cur, Outcome{}, fmt.Errorf("%w: %s:%s is %s/%s, a state this version does not know (a newer center handles it)",
				ErrWrongState, m.BizID, m.Key, m.Status, m.SendStatus)
		}
		return cur, Outcome{}, nil
	}
	var out Outcome
	var err error
	switch ev.Kind {
	case KindPrepare:
		out = prepare(&m, ev)
	case KindCommit, KindCheckCommit:
		out = decide(&m, ev, Committed)
	case KindRollback, KindCheckRollback:
		out = decide(&m, ev, RolledBack)
	case KindCheckUnknown:
		out = checkUnknown(&m, ev)
	case KindCheckDeferred:
		if m.Status == Prepared {
			m.VerifyNextAt = ev.RetryAt
			// Not called: give back the attempt its claim counted.
			m.VerifyAttempts = max(m.VerifyAttempts-1, 0)
			out.Effect = Changed
		}
	case KindCheckParked:
		if m.Status == Prepared {
			m.Status = VerifyFailed
			// Not called: give back the attempt its claim counted.
			m.VerifyAttempts = max(m.VerifyAttempts-1, 0)
			m.LastError = ev.Err
			out = Outcome{Effect: Changed, Parked: true}
		}
	case KindSent:
		switch {
		case m.Sendable():
			m.SendStatus = SendSent
			m.SentAt = ev.At
			m.SendRef = ev.Ref
			out.Effect = Changed
		case m.Status == Cancelled && m.HasBody && m.SendStatus == SendPending && !m.SendNextAt.IsZero():
			// Cancelled while its send was in flight (only a committed
			// message is ever claimed for a send, and a cancel keeps its
			// due time): it went out, so it is COMMITTED SENT and the
			// cancel came too late.
			m.Status = Committed
			m.SendStatus = SendSent
			m.SentAt = ev.At
			m.SendRef = ev.Ref
			m.Conflicts++
			out = Outcome{Effect: Changed, LateCancel: true}
		}
	case KindSendFailed:
		out = sendFailed(&m, ev)
	case KindSendDeferred:
		if m.Sendable() {
			m.SendNextAt = ev.RetryAt
			out.Effect = Changed
		}
	case KindResolveCommit, KindResolveRollback:
		out, err = resolve(&m, ev)
	case KindRedeliver:
		out, err = redeliver(&m, ev)
	case KindRetryNow:
		out, err = retryNow(&m, ev)
	case KindCloseOrphan:
		out, err = closeOrphan(&m, ev)
	case KindReleaseOrder:
		out, err = releaseOrder(&m)
	case KindCloseHead:
		out, err = closeHead(&m)
	case KindCancel, KindOperatorCancel:
		out, err = cancel(&m, ev)
	default:
		return cur, Outcome{}, fmt.Errorf("%w: unknown kind %d", ErrBadEvent, ev.Kind)
	}
	if err != nil {
		return cur, Outcome{}, err
	}
	if out.Effect != NoOp {
		m.UpdatedAt = ev.At
	}
	return m, out, nil
}

func applyToNone(m Message, ev Event) (Message, Outcome, error) {
	switch ev.Kind {
	case KindPrepare:
		m.Status = Prepared
		setBody(&m, ev.Body)
		m.VerifyNextAt = ev.At.Add(ev.Body.CheckAfter)
	case KindCommit:
		m.Status = Committed
		m.SendStatus = SendPending
		m.SendNextAt = ev.At
		m.DecidedAt = ev.At
	case KindRollback:
		m.Status = RolledBack
		m.DecidedAt = ev.At
	case KindCancel:
		// Before the PREPARE and the decision: they are kept for the
		// record and never sent.
		m.Status = Cancelled
		m.DecidedAt = ev.At
	default:
		if ev.Kind.IsOperator() {
			return m, Outcome{}, fmt.Errorf("%w: %s:%s", ErrNoMessage, m.BizID, m.Key)
		}
		// A late result for a message that is gone (purged): nothing to do.
		return m, Outcome{}, nil
	}
	m.CreatedAt = ev.At
	m.UpdatedAt = ev.At
	return m, Outcome{Effect: Changed}, nil
}

// sameBody tells whether b is m's body: the payload and where it goes
// (headers are not compared: a producer's re-send may carry a new trace
// context).
func sameBody(m *Message, b *Body) bool {
	return bytes.Equal(m.Payload, b.Payload) && m.Target == b.Target && m.Topic == b.Topic &&
		m.ForwardKey == b.ForwardKey && m.Tag == b.Tag && m.Verify == b.Verify && m.OrderKey == b.OrderKey
}

func setBody(m *Message, b *Body) {
	m.HasBody = true
	m.Payload = b.Payload
	m.Headers = b.Headers
	m.Target = b.Target
	m.Topic = b.Topic
	m.ForwardKey = b.ForwardKey
	m.Tag = b.Tag
	m.Verify = b.Verify
	m.OrderKey = b.OrderKey
	m.DeliverAt = b.DeliverAt
}

// becomeSendable sets the first due time of a message that just became
// sendable at at: at, or its DeliverAt if later. It tells whether the
// message is due now (Outcome.Sendable).
func becomeSendable(m *Message, at time.Time) bool {
	m.SendNextAt = at
	if m.DeliverAt.After(at) {
		m.SendNextAt = m.DeliverAt
		return false
	}
	return m.HasBody
}

// prepare handles a PREPARE on an existing row: a duplicate, or the body of a
// message whose decision came first.
func prepare(m *Message, ev Event) Outcome {
	if m.HasBody {
		// Duplicate or replay; the first body wins. A different body is
		// told (the producer reused a message key).
		return Outcome{BodyDiffers: ev.Body != nil && !sameBody(m, ev.Body)}
	}
	switch m.Status {
	case Committed:
		setBody(m, ev.Body)
		if m.SendStatus == SendPending {
			return Outcome{Effect: Changed, Sendable: becomeSendable(m, ev.At)}
		}
		return Outcome{Effect: Changed}
	case RolledBack, Cancelled:
		setBody(m, ev.Body) // kept for the record; never sent
		return Outcome{Effect: Changed}
	}
	return Outcome{}
}

// decide applies a commit or rollback decision (envelope or check-back
// answer): the first decision wins, a contradicting one is a conflict.
func decide(m *Message, ev Event, to Status) Outcome {
	switch m.Status {
	case Prepared, VerifyFailed:
		m.Status = to
		m.DecidedAt = ev.At
		if to == Committed {
			m.SendStatus = SendPending
			m.SendAttempts = 0
			return Outcome{Effect: Changed, Sendable: becomeSendable(m, ev.At)}
		}
		return Outcome{Effect: Changed}
	case to:
		return Outcome{} // duplicate
	case Cancelled:
		if to == RolledBack && m.SendNextAt.IsZero() {
			// A rollback beats a cancel that was not applied to a
			// committed message, whichever came first: the message ends
			// ROLLED_BACK (never sent either way), so the outcome does
			// not depend on the arrival order.
			m.Status = RolledBack
			m.DecidedAt = ev.At
			return Outcome{Effect: Changed}
		}
		return Outcome{} // cancelled: the decision changes nothing
	default:
		m.Conflicts++
		return Outcome{Effect: Conflict}
	}
}

// checkUnknown applies an unknown answer (or a failed call) to the attempt
// its claim counted: at or past the limit the message is parked, with at
// most MaxAttempts recorded (a claim past the limit, after a call that was
// never answered, makes no call).
func checkUnknown(m *Message, ev Event) Outcome {
	if m.Status != Prepared {
		return Outcome{} // decided meanwhile: a stale result
	}
	m.LastError = ev.Err
	if ev.MaxAttempts > 0 && m.VerifyAttempts >= ev.MaxAttempts {
		m.Status = VerifyFailed
		m.VerifyAttempts = ev.MaxAttempts
		return Outcome{Effect: Changed, Parked: true}
	}
	m.VerifyNextAt = ev.RetryAt
	return Outcome{Effect: Changed}
}

func sendFailed(m *Message, ev Event) Outcome {
	if !m.Sendable() {
		return Outcome{} // sent or redelivered meanwhile
	}
	m.SendAttempts++
	m.LastError = ev.Err
	if ev.Permanent || (ev.MaxAttempts > 0 && m.SendAttempts >= ev.MaxAttempts) {
		m.SendStatus = SendDead
		if ev.ReleaseOnDead {
			m.OrderSeq = 0
		}
		return Outcome{Effect: Changed, Dead: true}
	}
	m.SendNextAt = ev.RetryAt
	return Outcome{Effect: Changed}
}

func resolve(m *Message, ev Event) (Outcome, error) {
	to, what := Committed, "resolve as commit"
	if ev.Kind == KindResolveRollback {
		to, what = RolledBack, "resolve as rollback"
	}
	if m.Status != Prepared && m.Status != VerifyFailed {
		return Outcome{}, wrongState(m, what)
	}
	out := decide(m, ev, to)
	m.LastError = ""
	return out, nil
}

func redeliver(m *Message, ev Event) (Outcome, error) {
	if m.Status != Committed || !m.HasBody || m.SendStatus == SendPending {
		return Outcome{}, wrongState(m, "redeliver")
	}
	m.SendStatus = SendPending
	m.SendAttempts = 0
	m.SendNextAt = ev.At
	m.LastError = ""
	return Outcome{Effect: Changed, Sendable: true}, nil
}

// retryNow resets the backoff: a PREPARED message is checked back at once, a
// VERIFY_FAILED one is re-opened with fresh attempts, a pending or DEAD send
// is tried at once with fresh attempts.
func retryNow(m *Message, ev Event) (Outcome, error) {
	switch {
	case m.Status == Prepared:
		m.VerifyNextAt = ev.At
		return Outcome{Effect: Changed}, nil
	case m.Status == VerifyFailed:
		m.Status = Prepared
		m.VerifyAttempts = 0
		m.VerifyNextAt = ev.At
		return Outcome{Effect: Changed}, nil
	case m.Status == Committed && m.HasBody && m.SendStatus != SendSent:
		m.SendStatus = SendPending
		m.SendAttempts = 0
		m.SendNextAt = ev.At
		return Outcome{Effect: Changed, Sendable: true}, nil
	}
	return Outcome{}, wrongState(m, "retry")
}

// closeOrphan is the operator's answer to an orphan COMMIT whose PREPARE is
// lost: the message is closed as ROLLED_BACK, so it is never forwarded (a
// PREPARE arriving later is kept for the record and not sent, a late COMMIT
// is a conflict). A committed message with a body is never rolled back.
func closeOrphan(m *Message, ev Event) (Outcome, error) {
	if !m.Orphan() {
		if m.Status == Committed {
			return Outcome{}, fmt.Errorf("%w: cannot close a COMMITTED message that has its body as rolled back (only an orphan COMMIT without a PREPARE can be closed)", ErrWrongState)
		}
		return Outcome{}, wrongState(m, "close as orphan")
	}
	m.Status = RolledBack
	m.DecidedAt = ev.At
	m.SendStatus = SendPending
	m.SendAttempts = 0
	m.SendNextAt = time.Time{}
	m.LastError = ""
	return Outcome{Effect: Changed}, nil
}

// ClaimCheckback is what a store's check-back claim does to a PREPARED row
// (the stores do it in SQL, for many rows at once): it counts the attempt
// the claim is for and leases the row until until, which is also when the
// message is checked again if no answer is ever recorded (its center died
// during the call). Counting at the claim, not at the answer, keeps the
// calls of a message within MaxAttempts whatever crashes in between. The
// claim's result then applies without counting again: KindCheckCommit,
// KindCheckRollback, KindCheckUnknown (parks at the limit), or
// KindCheckDeferred (not called: gives the attempt back). The lease token
// is the store's to set.
func ClaimCheckback(m Message, until time.Time) Message {
	m.VerifyAttempts++
	m.VerifyNextAt = until
	return m
}

// releaseOrder: an operator lets the later messages of an ordered message's
// key go on without it (see KindReleaseOrder).
func releaseOrder(m *Message) (Outcome, error) {
	if !m.HoldsOrder() {
		return Outcome{}, fmt.Errorf("%w: only a sequenced COMMITTED message that is pending or DEAD holds an order key (this one: %s, send status %s, sequence %d)",
			ErrWrongState, m.Status, m.SendStatus, m.OrderSeq)
	}
	m.OrderSeq = 0
	return Outcome{Effect: Changed}, nil
}

// cancel applies a cancel envelope (KindCancel) or an operator's cancel
// (KindOperatorCancel): a message that is not sent ends CANCELLED and is
// never sent; its order key, if it held one, is released. A committed
// message keeps its due time (SendNextAt), which tells a send result
// arriving later that its send was in flight (see KindSent). After the
// send, a cancel envelope is counted (LateCancel) and an operator's
// refused.
func cancel(m *Message, ev Event) (Outcome, error) {
	op := ev.Kind == KindOperatorCancel
	switch {
	case m.Status == Prepared || m.Status == VerifyFailed || (m.Status == Committed && m.SendStatus != SendSent):
		if m.Status != Committed {
			m.SendNextAt = time.Time{}
		}
		m.Status = Cancelled
		m.OrderSeq = 0
		m.DecidedAt = ev.At
		if op {
			m.LastError = ""
		}
		return Outcome{Effect: Changed}, nil
	case op:
		return Outcome{}, wrongState(m, "cancel")
	case m.Status == Committed: // sent
		m.Conflicts++
		return Outcome{Effect: Conflict, LateCancel: true}, nil
	}
	return Outcome{}, nil // rolled back or cancelled already
}

// closeHead: an operator gives a message up and releases its order key (see
// KindCloseHead).
func closeHead(m *Message) (Outcome, error) {
	if m.Status != Committed || !m.HasBody || m.SendStatus == SendSent {
		return Outcome{}, wrongState(m, "close")
	}
	if m.OrderKey == "" {
		return Outcome{}, fmt.Errorf("%w: close-head is for messages with an order key (retry or redeliver this one)", ErrWrongState)
	}
	if m.SendStatus == SendDead && m.OrderSeq == 0 {
		return Outcome{}, fmt.Errorf("%w: already DEAD and holding no order key", ErrWrongState)
	}
	m.SendStatus = SendDead
	m.OrderSeq = 0
	return Outcome{Effect: Changed}, nil
}
