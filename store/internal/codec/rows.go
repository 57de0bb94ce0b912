package codec

import (
	"context"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Columns lists the message columns in the order every driver selects and
// scans them.
const Columns = "id, biz_id, message_key, partition, status, has_body, payload, headers, " +
	"target, topic, forward_key, tag, verify, verify_attempts, verify_next_at, " +
	"send_status, send_attempts, send_next_at, send_ref, lease_token, last_error, conflicts, " +
	"created_at, updated_at, decided_at, sent_at, order_key, order_seq, deliver_at"

// Time truncates t to what both databases keep: microseconds, in UTC. The
// zero time stays zero (stored as NULL).
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

// Normalize applies Time to every time of m, so that what Apply returns
// equals what Get reads back.
func Normalize(m *state.Message) {
	m.VerifyNextAt = Time(m.VerifyNextAt)
	m.SendNextAt = Time(m.SendNextAt)
	m.CreatedAt = Time(m.CreatedAt)
	m.UpdatedAt = Time(m.UpdatedAt)
	m.DecidedAt = Time(m.DecidedAt)
	m.SentAt = Time(m.SentAt)
	m.DeliverAt = Time(m.DeliverAt)
}

// Prepare readies a Fold result for writing: the sendable rows are leased
// (a fresh token, one for the batch as for a claim; due again at
// now+req.SendLease when that is positive, else left due now for the next
// scan), then offered to req.Forward (those it sends are written sent, see
// store.Folded.ForwardFirst), and every written row is normalized.
func Prepare(ctx context.Context, f *store.Folded, now time.Time, req store.ApplyRequest) {
	token := LeaseToken()
	for _, m := range f.Sendable {
		m.LeaseToken = token
		if req.SendLease > 0 {
			m.SendNextAt = now.Add(req.SendLease)
		}
	}
	f.ForwardFirst(ctx, req.Forward, now, req.Ordered)
	for _, m := range f.Inserts {
		Normalize(m)
	}
	for _, m := range f.Updates {
		Normalize(m)
	}
	for i := range f.Audits {
		f.Audits[i].At = Time(f.Audits[i].At)
	}
}

// Result builds the ApplyResult of a prepared Fold result.
func Result(f *store.Folded) store.ApplyResult {
	res := store.ApplyResult{Outcomes: f.Outcomes}
	if len(f.Sendable) > 0 {
		res.Sendable = make([]state.Message, len(f.Sendable))
		for i, m := range f.Sendable {
			res.Sendable[i] = *m
		}
	}
	if len(f.Forwarded) > 0 {
		res.Forwarded = make([]state.Message, len(f.Forwarded))
		for i, m := range f.Forwarded {
			res.Forwarded[i] = *m
		}
	}
	return res
}

// CheckClaim validates a claim request.
func CheckClaim(c store.Claim) error {
	switch {
	case c.Limit <= 0:
		return errField("Limit", "must be positive")
	case c.Lease <= 0:
		return errField("Lease", "must be positive")
	case c.Run < 0:
		return errField("Run", "must not be negative")
	}
	return nil
}

type fieldError struct{ field, msg string }

func (e fieldError) Error() string { return "claim: " + e.field + " " + e.msg }

func errField(field, msg string) error { return fieldError{field, msg} }

// Limit returns a List page size: def for n <= 0, at most max.
func Limit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}
