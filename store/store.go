package store

import (
	"context"
	"errors"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

var (
	// ErrNotFound: no message with that bizID and key.
	ErrNotFound = errors.New("message not found")
	// ErrWrongState: an operator action the message's state does not allow.
	// Errors returned for it also wrap state.ErrWrongState.
	ErrWrongState = state.ErrWrongState
	// ErrNotMigrated: the database schema is missing or older than this
	// binary; run "eventcenter migrate".
	ErrNotMigrated = errors.New("database schema not migrated")
	// ErrOrderUnavailable: the store cannot keep per-key order (a sharded
	// store of several shards).
	ErrOrderUnavailable = errors.New("per-key order is not available on this store")
)

// Store is what the center needs from its database. Every method is safe for
// concurrent use. Times come from the store's injected clock.
type Store interface {
	// Apply folds changes through the state machine and writes the result in
	// one transaction. Changes are applied in order; several may concern the
	// same message. Messages that become sendable are returned leased for
	// SendLease (the caller forwards them at once: the fast path). Replaying
	// the same changes is a no-op.
	Apply(ctx context.Context, req ApplyRequest) (ApplyResult, error)

	// ClaimSends leases up to Limit committed messages with a body that are
	// due for sending in the given partitions. Two concurrent claimers never
	// get the same message while its lease runs. With Claim.Ordered it
	// skips every message behind an earlier-sequenced one of its order key
	// that still holds the key (state.Message.HoldsOrder), whatever
	// partition or center that one belongs to.
	ClaimSends(ctx context.Context, c Claim) ([]state.Message, error)
	// ClaimCheckbacks leases up to Limit PREPARED messages whose check-back
	// is due in the given partitions, and counts the attempt the claim is
	// for (state.ClaimCheckback: VerifyAttempts+1, VerifyNextAt = now +
	// Lease), so a claim whose answer is never recorded still counts. The
	// returned rows carry the counted attempt; their Payload may be left
	// out (nil): a check-back does not read it. The claim's result applies
	// without counting again; a KindCheckDeferred result gives it back.
	ClaimCheckbacks(ctx context.Context, c Claim) ([]state.Message, error)

	// MarkSent records successful sends in one statement; it is the
	// state.KindSent transition for many messages. Messages no longer
	// pending are left alone.
	MarkSent(ctx context.Context, sent []Sent) error

	// Get returns one message, or ErrNotFound.
	Get(ctx context.Context, bizID, key string) (state.Message, error)
	// List returns messages matching f, newest first, and a cursor for the
	// next page ("" when there is none). It never reads payloads or
	// headers (see Summary): a page of large messages costs what its
	// summaries cost.
	List(ctx context.Context, f Filter) (Page, error)
	// Counts returns the number of messages per bizID, status and send
	// status.
	Counts(ctx context.Context) ([]Count, error)
	// OldestPrepared returns the creation time of the oldest PREPARED
	// message per bizID.
	OldestPrepared(ctx context.Context) (map[string]time.Time, error)
	// OrphanCommits returns, per bizID, the number of orphan COMMITs
	// (COMMITTED without a body: the PREPARE was dead-lettered or never
	// came, so nothing can be forwarded) and the creation time of the
	// oldest. BizIDs without one are absent.
	OrphanCommits(ctx context.Context) (map[string]OrphanStat, error)
	// Audit returns the operator actions on one message, oldest first.
	Audit(ctx context.Context, bizID, key string) ([]AuditEntry, error)
	// AddAudit records an operator action that changes no row itself (a
	// dead-letter record replayed for a message).
	AddAudit(ctx context.Context, e AuditEntry) error
	// AuditLog lists audit records of every message, newest first, with
	// their IDs (for paging with AuditQuery.BeforeID).
	AuditLog(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// PurgeAudit deletes up to limit audit records written before the
	// given time, oldest first; it returns how many it deleted. Audit
	// records have their own retention: Purge leaves them.
	PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error)
	// RetryNowBizID applies an operator retry-now to every PREPARED,
	// VERIFY_FAILED, pending or DEAD message of a bizID (after an outage),
	// with one audit record each; it returns how many it reset.
	RetryNowBizID(ctx context.Context, bizID string, who Actor) (int, error)
	// Purge deletes up to limit terminal messages (rolled back, or committed
	// and sent) decided or sent before the given time; it returns how many
	// it deleted. Their audit records stay (see PurgeAudit).
	Purge(ctx context.Context, before time.Time, limit int) (int, error)

	// Close releases what the store opened itself (not a pool passed in).
	Close() error
}

// Change is one event for one message.
type Change struct {
	BizID string
	Key   string
	// Partition is the control partition; recorded when the row is created.
	Partition int32
	// Offset is the control record's offset, when HasOffset (ingest sets
	// both; the verifier's and the operators' changes have none). With
	// ApplyRequest.WriteAhead, an ordered message the change makes
	// sendable may be written sent before its send (state.Message.SentAhead).
	Offset    int64
	HasOffset bool
	Event     state.Event
	// LeaseToken, when non-zero, makes the change apply only if the row
	// still carries this lease (a check-back or send result of a claim that
	// expired and was taken over is dropped).
	LeaseToken int64
	// Audit, when set, is written with the change (operator actions).
	Audit *Actor
}

// Actor says who did an operator action and why.
type Actor struct {
	Who    string
	Reason string
}

// ApplyRequest is a batch of changes applied in one transaction.
type ApplyRequest struct {
	Changes []Change
	// SendLease is how long messages handed to the caller for sending stay
	// leased; 0 means they are left due now for the next scan.
	SendLease time.Duration
	// Forward, when set, sends messages before they are written: it is
	// called inside the transaction, after the rows are loaded, locked and
	// folded and before anything is written, with the messages the batch
	// made sendable, leased (a new row's ID is still 0). The messages it
	// reports sent are written already sent (state.KindSent with the
	// reference) and returned in ApplyResult.Forwarded; the others are
	// written leased and returned in Sendable, as without Forward. So a
	// message forwarded at once is written once instead of twice (issue
	// 14). If the transaction then fails, nothing records the send: the
	// caller replays the changes and the message is forwarded again (at
	// least once, with its stable id). Row locks are held while it runs,
	// so it must return promptly. It may be called again if the store
	// retries the transaction, and concurrently (a sharded store applies
	// its shards' parts at once).
	Forward ForwardFunc
	// Ordered enforces per-key order on what the batch makes sendable: a
	// message behind an earlier-sequenced one of its order key that still
	// holds the key is neither leased, nor forwarded, nor returned; it is
	// written parked (unleased, due after SendLease, or now without one)
	// and woken when the key is freed (see ApplyResult.Woken). Messages
	// with an order key are sequenced whether or not it is set.
	Ordered bool
	// WriteAhead (with Ordered and SendAhead; stores that keep sent
	// watermarks: PostgreSQL) writes the ordered messages the batch makes
	// sendable through a control record (Change.HasOffset, on the row's own
	// partition) SENT in the transaction that sequences them, before they
	// are sent (state.Message.SentAhead), instead of pending and then
	// marked: one durable write per message instead of two (docs/ordering.md).
	// After the commit they are sent with SendAhead, each order key's
	// messages one after the other, and each partition's sent watermark
	// is advanced past the batch, which confirms them; those not sent are
	// written back to pending, leased, and returned in Sendable.
	WriteAhead bool
	// SendAhead sends the messages written ahead, after the commit (see
	// WriteAhead); it may be called several times for one batch.
	SendAhead ForwardFunc
	// AheadInOrder: SendAhead keeps each order key's order itself, so it
	// is called once per batch with every message written ahead, each
	// key's in sequence, instead of once per message of a key. It must
	// send a key's message only behind every earlier one of the key in the
	// call (acknowledged, or pipelined ahead of it on a transport that
	// keeps their order) and, once one of a key is not sent, send none of
	// the key's later ones: the store treats those as never offered
	// (parked behind the first one not sent), whatever it answers for
	// them, except a message it answers sent.
	AheadInOrder bool
}

// ForwardFunc sends messages and returns one result per message, in order
// (see ApplyRequest.Forward).
type ForwardFunc func(ctx context.Context, msgs []state.Message) []Forwarded

// Forwarded is the result of forwarding one message: Sent, with the
// broker's reference, or not (then it is written leased, for the fast path
// or the scan to send).
type Forwarded struct {
	Sent bool
	Ref  string
	// Held (not Sent): the caller holds the message back (a limit of its
	// bizID: docs/fairness.md): it is written due now and not leased, for a claim
	// to take when the limit allows, and is not returned in Sendable.
	Held bool
}

// ApplyResult says what a batch did.
type ApplyResult struct {
	// Outcomes has one entry per change, in order.
	Outcomes []ChangeOutcome
	// Sendable are the messages that became due for sending, leased.
	Sendable []state.Message
	// Forwarded are the messages ApplyRequest.Forward or SendAhead sent,
	// as written (sent).
	Forwarded []state.Message
	// Ahead counts the Forwarded that were written ahead and confirmed by
	// the batch's sent watermarks (ApplyRequest.WriteAhead); Unconfirmed
	// counts the messages written ahead by an earlier try of the batch
	// whose send was never confirmed, which it wrote back to pending.
	Ahead, Unconfirmed int
	// Woken counts the parked messages of the order keys the batch freed
	// that the store made due at once after its commit (the wake): the
	// caller's forwarder should claim now rather than at its next scan.
	Woken int
}

// ChangeOutcome is the result of one change.
type ChangeOutcome struct {
	state.Outcome
	// Err is set for a rejected operator action (wraps state.ErrWrongState
	// or ErrNotFound) or a bad event; the rest of the batch still applies.
	Err error
	// Stale: dropped because the lease token no longer matched.
	Stale bool
}

// Claim asks for due work in a set of partitions.
type Claim struct {
	Partitions []int32
	Limit      int
	Lease      time.Duration
	// Ordered (ClaimSends only) skips messages held back by their order
	// key (see Store.ClaimSends).
	Ordered bool
	// Run (ClaimSends and NextClaimer.MarkSentClaimNext, with Ordered), when
	// above 1, leases behind each ordered message claimed (a head: no
	// earlier message holds its key) up to Run-1 of the next messages of
	// its queue with the same lease token, so that a key's messages go
	// to the target together (forwarder.OrderedTarget) instead of one
	// round trip each. A run is unbroken: the messages follow the head in
	// sequence order without a gap, each pending, not under a live send
	// lease, never tried or due, and on the head's partition; it ends at
	// the first that is not (see RunOf). The
	// claim returns each run right after its head, in sequence order; the
	// runs count against Limit.
	Run int
	// FairCheckbacks (ClaimCheckbacks only), when set, shares Limit
	// between the bizIDs with due check-backs by weight, with per-bizID
	// caps (see Fair), instead of taking the oldest due first.
	FairCheckbacks *Fair
	// FairSends, when set (ClaimSends only), shares Limit between bizIDs by weight,
	// with per-bizID caps, instead of taking the oldest due rows first
	// (see Fair).
	FairSends *Fair
}

// Sent is one successful send.
type Sent struct {
	ID  int64
	Ref string
	// Ordered: the message has an order sequence; MarkSent then makes the
	// next message of its key due at once (it was parked while held).
	Ordered bool
}

// Filter selects messages for List. Zero fields do not filter.
type Filter struct {
	BizID       string
	Status      state.Status
	SendStatus  *state.SendStatus
	KeyContains string
	// CreatedBefore selects messages older than a point in time.
	CreatedBefore time.Time
	// Orphan selects orphan COMMITs: COMMITTED without a body.
	Orphan bool
	// ScheduledAt, when set, selects the messages SCHEDULED at that time
	// (state.Message.Scheduled: COMMITTED PENDING with a later deliver-at).
	ScheduledAt time.Time
	Limit       int
	// Cursor is the Next of a previous page.
	Cursor string
}

// Page is one page of List.
type Page struct {
	Messages []Summary
	Next     string
}

// Summary is a message as List returns it: every field but the payload and
// the headers, which List never reads (Payload and Headers are nil), and
// the payload's size. Get returns the whole message.
type Summary struct {
	state.Message
	// PayloadSize is the payload's length in bytes.
	PayloadSize int
}

// Count is the number of messages with one bizID, status and send status.
type Count struct {
	BizID      string
	Status     state.Status
	SendStatus state.SendStatus
	N          int64
	// Oldest is the creation time of the oldest of them (the same query
	// reads it: the console's trends take the oldest unsent message from
	// it at no extra cost).
	Oldest time.Time
	// Scheduled is how many of the N are SCHEDULED (state.Message.Scheduled
	// at the store's clock): committed, pending, and held until a
	// deliver-at still to come. They are part of N.
	Scheduled int64
}

// OrphanStat describes the orphan COMMITs of one bizID.
type OrphanStat struct {
	N int64
	// Oldest is the creation time of the oldest.
	Oldest time.Time
}

// AuditQuery selects audit records for AuditLog.
type AuditQuery struct {
	// BizID, when set, keeps that bizID's records only.
	BizID string
	// Since, when set, keeps records at or after it.
	Since time.Time
	// BeforeID, when positive, keeps records with a smaller ID (the next
	// page after a page whose last record had this ID).
	BeforeID int64
	// Limit bounds the records returned (must be positive).
	Limit int
}

// AuditEntry records one operator action.
type AuditEntry struct {
	// ID orders the records; set by AuditLog only.
	ID     int64
	BizID  string
	Key    string
	Action string
	Who    string
	Reason string
	At     time.Time
	// Before and After are the statuses around the action.
	Before string
	After  string
}

// OrderRef names the queue a message with an order key is ordered in: its
// bizID, order key, target and topic (state.Message.OrderKey).
type OrderRef struct {
	BizID, OrderKey, Target, Topic string
}

// OrderOf returns the queue m is ordered in.
func OrderOf(m *state.Message) OrderRef {
	return OrderRef{BizID: m.BizID, OrderKey: m.OrderKey, Target: m.Target, Topic: m.Topic}
}

// BlockedKey is an order key whose head (its lowest-sequenced message that
// still holds the key: state.Message.HoldsOrder) is DEAD or has failed at
// least once, so the later messages of the key wait.
type BlockedKey struct {
	OrderRef
	// Head is the head message (without payload and headers).
	Head Summary
	// Waiting is how many later messages of the key hold it too.
	Waiting int64
	// Since is when the head was committed (DecidedAt): how long the key
	// has been held at most.
	Since time.Time
}

// Orderer is implemented by the stores that keep per-key order: the
// operator's view of blocked keys.
type Orderer interface {
	// BlockedKeys returns up to limit keys whose head is DEAD or has
	// failed (SendAttempts > 0), oldest head first.
	BlockedKeys(ctx context.Context, bizID string, limit int) ([]BlockedKey, error)
}

// NextClaimer is implemented by the stores that lease the next message of
// an order key with its predecessor's sent mark, so that a forwarder
// sends it at once instead of waiting for a wake and a scan (a hot key's
// messages go one round trip each, not one scan each).
type NextClaimer interface {
	// MarkSentClaimNext is MarkSent, and then, for each Ordered one of
	// sent, leases for c.Lease the next message of its order key if that
	// one is free to go now: the lowest-sequenced message that holds the
	// key, pending, on one of c.Partitions, never tried (a failed one
	// waits for its backoff and the claims) and not under a send lease
	// (parked, or its lease ran out). It returns what it leased. The next
	// messages it does not lease are woken as MarkSent wakes them. The
	// marks are committed before the next messages are looked for (as
	// MarkSent's wake does): an Apply that parks a message behind one of
	// them and commits meanwhile looks again after its commit, so one of
	// the two sees the other.
	// With c.Run above 1, each message it leases heads a run, leased with
	// it as ClaimSends leases runs (Claim.Run); c.Limit bounds the heads
	// and runs together, but never leaves a head out.
	// woken counts the next messages made due (not leased) for the
	// claims: on other partitions, or committed while the leases were
	// looked for.
	MarkSentClaimNext(ctx context.Context, sent []Sent, c Claim) (leased []state.Message, woken int, err error)
}
