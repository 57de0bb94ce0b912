package state

import (
	"errors"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
)

// Status is a message's decision status; the numbers are TrustMessage's.
type Status int16

const (
	// None means no row exists yet.
	None Status = 0
	// Prepared: announced, waiting for the producer's decision.
	Prepared Status = 1
	// Committed: decided commit; forwarded once it has a body.
	Committed Status = 2
	// RolledBack: decided rollback; never forwarded.
	RolledBack Status = 3
	// VerifyFailed: check-backs exhausted (or the endpoint is not allowed);
	// parked until a late envelope or an operator decides.
	VerifyFailed Status = 4
	// Cancelled: cancelled by the producer (a cancel envelope) or an
	// operator before it was sent; terminal, never sent.
	Cancelled Status = 5
)

func (s Status) String() string {
	switch s {
	case None:
		return "NONE"
	case Prepared:
		return "PREPARED"
	case Committed:
		return "COMMITTED"
	case RolledBack:
		return "ROLLED_BACK"
	case VerifyFailed:
		return "VERIFY_FAILED"
	case Cancelled:
		return "CANCELLED"
	default:
		return fmt.Sprintf("STATUS(%d)", int16(s))
	}
}

// Known reports whether this version knows the status. A newer version may
// write statuses this one does not know (the compatibility rule: versions
// N and N-1 run together on the schema of N); Apply leaves such messages
// alone, and the stores' claims only ever select known statuses.
func (s Status) Known() bool { return s >= Prepared && s <= Cancelled }

// ParseStatus reads a status name (as String spells it) or number.
func ParseStatus(s string) (Status, error) {
	for _, st := range []Status{Prepared, Committed, RolledBack, VerifyFailed, Cancelled} {
		if s == st.String() || s == fmt.Sprint(int16(st)) {
			return st, nil
		}
	}
	return None, fmt.Errorf("unknown status %q (want PREPARED, COMMITTED, ROLLED_BACK, VERIFY_FAILED or CANCELLED)", s)
}

// SendStatus is the forwarding status of a committed message.
type SendStatus int16

const (
	// SendPending: to be sent (when due and the body is known).
	SendPending SendStatus = 0
	// SendSent: the target acknowledged it.
	SendSent SendStatus = 1
	// SendDead: gave up after the configured attempts or a permanent error.
	SendDead SendStatus = 2
)

func (s SendStatus) String() string {
	switch s {
	case SendPending:
		return "PENDING"
	case SendSent:
		return "SENT"
	case SendDead:
		return "DEAD"
	default:
		return fmt.Sprintf("SEND_STATUS(%d)", int16(s))
	}
}

// Known reports whether this version knows the send status (see
// Status.Known).
func (s SendStatus) Known() bool { return s >= SendPending && s <= SendDead }

// ParseSendStatus reads a send status name or number.
func ParseSendStatus(s string) (SendStatus, error) {
	for _, st := range []SendStatus{SendPending, SendSent, SendDead} {
		if s == st.String() || s == fmt.Sprint(int16(st)) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown send status %q (want PENDING, SENT or DEAD)", s)
}

// Message is one row: a message's state and everything needed to check it
// back and forward it.
type Message struct {
	// ID is assigned by the store on insert; 0 before.
	ID        int64
	BizID     string
	Key       string
	Partition int32

	Status  Status
	HasBody bool

	Payload    []byte
	Headers    []envelope.Header
	Target     string
	Topic      string
	ForwardKey string
	Tag        string
	Verify     string

	VerifyAttempts int
	VerifyNextAt   time.Time

	SendStatus   SendStatus
	SendAttempts int
	SendNextAt   time.Time
	// SendRef is the broker's reference for the forwarded record
	// (Kafka partition/offset, RocketMQ message id).
	SendRef string
	// LeaseToken identifies the current claim of a check-back or a send; a
	// result recorded with another token is stale and ignored.
	LeaseToken int64

	// OrderKey is the message's order key (ec-order-key; "" for none): it
	// is forwarded only after every earlier-sequenced message of its bizID
	// with the same order key, target and topic that still holds the key
	// (HoldsOrder).
	OrderKey string
	// OrderSeq is the message's place among them: assigned by the store,
	// from a per-key counter in the transaction that makes the message
	// sendable (its COMMIT, check-back commit answer or operator commit
	// applied with its body), so commit order is sequence order whatever
	// center applies it. 0 means unordered: no order key, not sendable
	// yet, or released (KindReleaseOrder, KindCloseHead, or DEAD under
	// Event.ReleaseOnDead).
	OrderSeq int64
	// SentAhead is set on an ordered message a store wrote SENT before
	// sending it (store.ApplyRequest.WriteAhead, docs/ordering.md): the control
	// record that made it sendable. Its send is confirmed once the sent
	// watermark of that control partition reaches the record's offset;
	// until then its key's later messages wait, and a replay of the record
	// writes it back to pending. Invalid otherwise.
	SentAhead ControlPos
	// OrderPred is the control record that sequenced the message's
	// predecessor in its order key, when that one was sequenced by a
	// control record in a batch that could write ahead: the message is not
	// sent before the sent watermark of that partition reaches it. Invalid
	// otherwise.
	OrderPred ControlPos

	// DeliverAt is the earliest time the message is forwarded (its
	// PREPARE's ec-deliver-at, or its ec-delay added to when it was read);
	// zero for "as soon as committed". Its first send is due at
	// max(commit, DeliverAt): the stores' due-time claim does the rest.
	DeliverAt time.Time

	// LastError is the latest check-back or send failure, or why the
	// message is parked.
	LastError string
	// Conflicts counts contradicting decisions that were ignored.
	Conflicts int

	CreatedAt time.Time
	UpdatedAt time.Time
	DecidedAt time.Time
	SentAt    time.Time
}

// ControlPos is the place of a control record: its partition, as stored
// (a control lane's partitions are offset), and its offset. The zero value
// is no place.
type ControlPos struct {
	Partition int32
	Offset    int64
	Valid     bool
}

// MessageID returns "bizID:messageKey".
func (m *Message) MessageID() string { return envelope.Key(m.BizID, m.Key) }

// Orphan tells whether m is an orphan COMMIT: committed, but its PREPARE
// (the body) never arrived, so it cannot be forwarded.
func (m *Message) Orphan() bool { return m.Status == Committed && !m.HasBody }

// HoldsOrder tells whether the message holds back the later messages of
// its order key: it is sequenced and committed, and neither sent nor
// released (a DEAD message holds until an operator retries, closes or
// releases it, unless its bizID releases on DEAD: Event.ReleaseOnDead).
func (m *Message) HoldsOrder() bool {
	return m.OrderSeq > 0 && m.Status == Committed && m.HasBody &&
		(m.SendStatus == SendPending || m.SendStatus == SendDead)
}

// NeedsOrderSeq tells whether the store must assign m an OrderSeq before
// writing it: it has an order key, is sendable and has none.
//
// A scheduled message (DeliverAt set) is never sequenced: it neither holds
// back nor waits for the other messages of its order key, and goes out at
// its time (docs/ordering.md).
func (m *Message) NeedsOrderSeq() bool {
	return m.OrderKey != "" && m.OrderSeq == 0 && m.DeliverAt.IsZero() && m.Sendable()
}

// Scheduled tells whether the message is SCHEDULED at now: committed,
// waiting to be sent, and held until its DeliverAt, which is still to
// come. It is a view of a COMMITTED PENDING message, not a status of its
// own.
func (m *Message) Scheduled(now time.Time) bool {
	return m.Sendable() && m.DeliverAt.After(now)
}

// Sendable tells whether the message is waiting to be forwarded.
func (m *Message) Sendable() bool {
	return m.Status == Committed && m.HasBody && m.SendStatus == SendPending
}

// Kind is the kind of an event.
type Kind uint8

const (
	// Envelopes from the control topic.
	KindPrepare Kind = iota + 1
	KindCommit
	KindRollback

	// Check-back results.
	KindCheckCommit
	KindCheckRollback
	// KindCheckUnknown: the answer was unknown, the call failed, or the
	// claim found the attempts used up. The attempt was counted when the
	// message was claimed (ClaimCheckback), so it is not counted again;
	// at or past MaxAttempts the message is parked as VERIFY_FAILED.
	KindCheckUnknown
	// KindCheckDeferred: claimed but not called (endpoint circuit open,
	// capacity, waited too long for a worker, stopping); rescheduled, and
	// the attempt its claim counted is given back.
	KindCheckDeferred
	// KindCheckParked: the endpoint may not be called (not allowed, not
	// resolvable); parked as VERIFY_FAILED with the reason, and the
	// attempt its claim counted given back.
	KindCheckParked

	// Forwarding results.
	KindSent
	KindSendFailed

	// Operator actions.
	KindResolveCommit
	KindResolveRollback
	KindRedeliver
	KindRetryNow
	// KindCloseOrphan closes an orphan COMMIT (COMMITTED without a body:
	// its PREPARE was dead-lettered or never came) as ROLLED_BACK. Only an
	// operator may; it is refused for any other state.
	KindCloseOrphan

	// KindSendDeferred: a pending send handed to the forwarder but not
	// queued (its queue stayed full): due again at RetryAt (usually now) for
	// the next scan instead of after its lease, no attempt counted. A
	// forwarding result, not an operator action (after KindCloseOrphan so
	// that the numbers of the others stay as they were).
	KindSendDeferred

	// KindReleaseOrder (operator): an ordered message that is not sent
	// stops holding its order key (OrderSeq 0): the later messages of the
	// key go on, and it is sent, if still pending, without order. A retry
	// or redelivery sequences it again, after the key's last message.
	KindReleaseOrder
	// KindCloseHead (operator): a committed message with an order key that
	// is not sent is given up (DEAD) and stops holding its key: it is never
	// sent unless retried, and the later messages of the key go on.
	KindCloseHead

	// KindCancel (cancel envelope): a message not sent yet ends CANCELLED
	// and is never sent; after the send it is a no-op that is counted
	// (Outcome.LateCancel, a conflict on the row).
	KindCancel
	// KindOperatorCancel (operator): as KindCancel, refused for a message
	// that is sent, rolled back or already cancelled.
	KindOperatorCancel
)

var kindNames = map[Kind]string{
	KindPrepare: "prepare", KindCommit: "commit", KindRollback: "rollback",
	KindCheckCommit: "check_commit", KindCheckRollback: "check_rollback",
	KindCheckUnknown: "check_unknown", KindCheckDeferred: "check_deferred",
	KindCheckParked: "check_parked", KindSent: "sent", KindSendFailed: "send_failed",
	KindResolveCommit: "resolve_commit", KindResolveRollback: "resolve_rollback",
	KindRedeliver: "redeliver", KindRetryNow: "retry_now", KindCloseOrphan: "close_orphan",
	KindSendDeferred: "send_deferred", KindReleaseOrder: "release_order", KindCloseHead: "close_head",
	KindCancel: "cancel", KindOperatorCancel: "operator_cancel",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsOperator tells whether k is an operator action.
func (k Kind) IsOperator() bool {
	return (k >= KindResolveCommit && k <= KindCloseOrphan) || k == KindReleaseOrder || k == KindCloseHead || k == KindOperatorCancel
}

// Body is what a PREPARE carries.
type Body struct {
	Payload    []byte
	Headers    []envelope.Header
	Target     string
	Topic      string
	ForwardKey string
	Tag        string
	Verify     string
	// OrderKey is the message's order key (ec-order-key); "" for none.
	OrderKey string
	// CheckAfter is the resolved delay before the first check-back
	// (envelope value or the configured default).
	CheckAfter time.Duration
	// DeliverAt is the resolved earliest send time (ec-deliver-at, or
	// ec-delay from when the PREPARE was read); zero for none.
	DeliverAt time.Time
}

// Event is one thing that happened to a message.
type Event struct {
	Kind Kind
	// At is when it is applied (the caller's clock).
	At time.Time
	// Body is set for KindPrepare.
	Body *Body
	// RetryAt is the next attempt time for KindCheckUnknown,
	// KindCheckDeferred, KindSendFailed (backoff and jitter included) and
	// KindSendDeferred.
	RetryAt time.Time
	// MaxAttempts is the attempt limit for KindCheckUnknown and
	// KindSendFailed; reaching it parks (VERIFY_FAILED) or kills (DEAD).
	MaxAttempts int
	// Permanent marks a send failure that retrying cannot fix.
	Permanent bool
	// ReleaseOnDead, for KindSendFailed: when the failure makes the message
	// DEAD, it also releases its order key (the bizID's "skip" setting);
	// without it a DEAD message holds the key (the default, "hold").
	ReleaseOnDead bool
	// Err is the failure or reason, kept as LastError.
	Err string
	// Ref is the broker reference for KindSent.
	Ref string
}

// Effect says what applying an event did.
type Effect uint8

const (
	// NoOp: nothing changed (duplicate, replay, stale result).
	NoOp Effect = iota
	// Changed: the row changed.
	Changed
	// Conflict: a decision contradicting the first one was ignored; the row
	// only counts it.
	Conflict
)

func (e Effect) String() string {
	switch e {
	case NoOp:
		return "noop"
	case Changed:
		return "applied"
	case Conflict:
		return "conflict"
	default:
		return fmt.Sprintf("effect(%d)", uint8(e))
	}
}

// Outcome is the result of Apply.
type Outcome struct {
	Effect Effect
	// Sendable: this event made the message due for forwarding now (a
	// scheduled message whose DeliverAt is still to come is not: the
	// stores' due-time claim sends it when it falls due).
	Sendable bool
	// LateCancel: a cancel came after the message was sent (or while its
	// send was in flight): nothing changed but the row's conflict count.
	LateCancel bool
	// Parked: this event moved the message to VERIFY_FAILED (alert).
	Parked bool
	// Dead: this event gave the send up (DEAD).
	Dead bool
	// BodyDiffers: a PREPARE for a message that has its body brought a
	// different one (payload or destination); it was ignored, the first
	// body stands.
	BodyDiffers bool
}

// ErrWrongState is returned for an operator action the message's state does
// not allow; the wrapped message says why.
var ErrWrongState = errors.New("wrong state")

// ErrNoMessage is returned for an operator action on a message that does not
// exist.
var ErrNoMessage = errors.New("no such message")

// ErrBadEvent is returned for an event that lacks what its kind needs.
var ErrBadEvent = errors.New("bad event")

func wrongState(m *Message, what string) error {
	return fmt.Errorf("%w: cannot %s a %s message (send status %s)", ErrWrongState, what, m.Status, m.SendStatus)
}
