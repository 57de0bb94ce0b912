package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

// Scheduled returns a PREPARE change with a deliver-at (and, if set, an
// order key).
func Scheduled(biz, key string, partition int32, at, deliverAt time.Time, orderKey string) store.Change {
	c := Prepare(biz, key, partition, at)
	c.Event.Body.DeliverAt = deliverAt
	c.Event.Body.OrderKey = orderKey
	return c
}

func (b *bundle) claimKeys(t *testing.T, limit int, parts ...int32) []string {
	t.Helper()
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: parts, Limit: limit, Lease: 24 * time.Hour}) // not claimed again within a test
	require.NoError(t, err)
	var ks []string
	for _, m := range got {
		ks = append(ks, m.Key)
	}
	slices.Sort(ks) // a claim's order within a batch is the store's
	return ks
}

// scheduledCount sums Count.Scheduled of biz, checking it is only ever
// set on COMMITTED PENDING counts and within their N.
func (b *bundle) scheduledCount(t *testing.T) int64 {
	t.Helper()
	cs, err := b.s.Counts(t.Context())
	require.NoError(t, err)
	var n int64
	for _, c := range cs {
		if c.Scheduled != 0 {
			require.Equal(t, state.Committed, c.Status)
			require.Equal(t, state.SendPending, c.SendStatus)
			require.LessOrEqual(t, c.Scheduled, c.N)
		}
		if c.BizID == biz {
			n += c.Scheduled
		}
	}
	return n
}

// applyDue applies changes without a send lease: what becomes sendable is
// due at once for a claim (as after a center's restart).
func (b *bundle) applyDue(t *testing.T, changes ...store.Change) {
	t.Helper()
	_, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)
}

// testScheduledClaim: a committed message with a deliver-at is not claimed
// before it, is claimed once it is due, and a cancelled one never is; the
// deliver-at is kept as written (also when the body came after the
// decision).
func testScheduledClaim(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	t0 := b.now()
	b.applyDue(t,
		Scheduled(biz, "s10", 0, t0, t0.Add(10*time.Second), ""), Commit(biz, "s10", 0, t0),
		Scheduled(biz, "s20", 0, t0, t0.Add(20*time.Second), ""), Commit(biz, "s20", 0, t0),
		Scheduled(biz, "cancelled", 0, t0, t0.Add(10*time.Second), ""), Commit(biz, "cancelled", 0, t0),
		Commit(biz, "late-body", 0, t0), Scheduled(biz, "late-body", 0, t0, t0.Add(15*time.Second), ""),
		Prepare(biz, "now", 0, t0), Commit(biz, "now", 0, t0),
	)
	b.apply(t, Event(biz, "cancelled", 0, state.Event{Kind: state.KindCancel, At: t0}))
	m := b.get(t, biz, "s10")
	require.Equal(t, t0.Add(10*time.Second), m.DeliverAt)
	require.Equal(t, t0.Add(10*time.Second), m.SendNextAt)
	require.True(t, m.Scheduled(t0))
	require.Equal(t, t0.Add(15*time.Second), b.get(t, biz, "late-body").DeliverAt)
	require.Equal(t, state.Cancelled, b.get(t, biz, "cancelled").Status)

	require.Equal(t, int64(3), b.scheduledCount(t), "s10, s20, late-body")
	page, err := b.s.List(t.Context(), store.Filter{ScheduledAt: t0, Limit: 10})
	require.NoError(t, err)
	var listed []string
	for _, m := range page.Messages {
		listed = append(listed, m.Key)
		require.Equal(t, m.DeliverAt, m.SendNextAt, "listed with its deliver-at")
	}
	slices.Sort(listed)
	require.Equal(t, []string{"late-body", "s10", "s20"}, listed)
	require.Equal(t, []string{"now"}, b.claimKeys(t, 10, 0), "only the unscheduled one is due")
	b.clock.Advance(10*time.Second - time.Microsecond)
	require.Empty(t, b.claimKeys(t, 10, 0), "not a microsecond early")
	b.clock.Advance(time.Microsecond)
	require.Equal(t, []string{"s10"}, b.claimKeys(t, 10, 0), "due; the cancelled one never")
	b.clock.Advance(5 * time.Second)
	require.Equal(t, []string{"late-body"}, b.claimKeys(t, 10, 0))
	require.Equal(t, int64(1), b.scheduledCount(t), "s20 only")
	b.clock.Advance(time.Hour)
	require.Equal(t, []string{"s20"}, b.claimKeys(t, 10, 0))
	require.Empty(t, b.claimKeys(t, 10, 0))
	require.Equal(t, state.Cancelled, b.get(t, biz, "cancelled").Status)
}

// testScheduledBacklog: what fell due while no center ran is claimed at
// once after start, at most the claim limit at a time (no thundering
// herd), each message once. Within one store (or shard) the earliest due
// come first; a sharded store shares the limit among its shards.
func testScheduledBacklog(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	t0 := b.now()
	var cs []store.Change
	// Committed in the reverse order of their deliver-at.
	for i := 5; i >= 1; i-- {
		k := "d" + string(rune('0'+i))
		cs = append(cs, Scheduled(biz, k, 0, t0, t0.Add(time.Duration(i)*time.Second), ""), Commit(biz, k, 0, t0))
	}
	b.applyDue(t, cs...)
	require.Empty(t, b.claimKeys(t, 2, 0))
	b.clock.Advance(time.Hour) // the center was down
	var all []string
	for range 10 {
		got := b.claimKeys(t, 2, 0)
		require.LessOrEqual(t, len(got), 2, "bounded by the claim limit")
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	require.Equal(t, []string{"d1", "d2", "d3", "d4", "d5"}, all, "each once")
}

// testScheduledNotInline: a scheduled message committed in an Apply with a
// Forward is not offered to it (nor left sendable in the result): the
// inline send never sends early. An unscheduled message of the same batch
// is.
func testScheduledNotInline(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	var offered []string
	forward := func(_ context.Context, msgs []state.Message) []store.Forwarded {
		out := make([]store.Forwarded, len(msgs))
		for i, m := range msgs {
			offered = append(offered, m.Key)
			out[i] = store.Forwarded{Sent: true, Ref: "r"}
		}
		return out
	}
	t0 := b.now()
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Forward: forward, Changes: []store.Change{
		Scheduled(biz, "later", 0, t0, t0.Add(time.Minute), ""), Commit(biz, "later", 0, t0),
		Prepare(biz, "now", 0, t0), Commit(biz, "now", 0, t0),
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"now"}, offered)
	require.Empty(t, res.Sendable)
	m := b.get(t, biz, "later")
	require.True(t, m.Sendable())
	require.Equal(t, t0.Add(time.Minute), m.SendNextAt, "due at its deliver-at, not leased")
	require.Empty(t, b.claimKeys(t, 10, 0))
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"later"}, b.claimKeys(t, 10, 0))
}

// testScheduledOrderKey: a scheduled message with an order key takes no
// sequence, so the later messages of its key are not held back by it.
func testScheduledOrderKey(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	t0 := b.now()
	first := Scheduled(biz, "first", 0, t0, t0.Add(time.Hour), "o-1")
	second := Scheduled(biz, "second", 0, t0, time.Time{}, "o-1")
	b.applyDue(t, first, Commit(biz, "first", 0, t0))
	b.applyDue(t, second, Commit(biz, "second", 0, t0))
	require.Zero(t, b.get(t, biz, "first").OrderSeq)
	require.NotZero(t, b.get(t, biz, "second").OrderSeq)
	require.Equal(t, []string{"second"}, b.claimKeys(t, 10, 0))
	b.clock.Advance(time.Hour)
	require.Equal(t, []string{"first"}, b.claimKeys(t, 10, 0))
}

// testCancel: an operator's cancel ends a scheduled message CANCELLED with
// an audit record; a cancel envelope after the send changes nothing but
// the conflict count; an operator's cancel of a sent message is refused.
func testCancel(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	t0 := b.now()
	b.applyDue(t,
		Scheduled(biz, "op", 0, t0, t0.Add(time.Hour), ""), Commit(biz, "op", 0, t0),
		Prepare(biz, "sent", 0, t0), Commit(biz, "sent", 0, t0),
	)
	res := b.apply(t, Operator(biz, "op", state.KindOperatorCancel, t0, "ops"))
	require.NoError(t, res.Outcomes[0].Err)
	require.Equal(t, state.Cancelled, b.get(t, biz, "op").Status)
	audit, err := b.s.Audit(t.Context(), biz, "op")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "operator_cancel", audit[0].Action)
	require.Equal(t, "CANCELLED", audit[0].After)

	require.Equal(t, []string{"sent"}, b.claimKeys(t, 10, 0))
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, biz, "sent").ID}}))
	res = b.apply(t, Event(biz, "sent", 0, state.Event{Kind: state.KindCancel, At: t0}))
	require.True(t, res.Outcomes[0].LateCancel)
	m := b.get(t, biz, "sent")
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Equal(t, 1, m.Conflicts)
	res = b.apply(t, Operator(biz, "sent", state.KindOperatorCancel, t0, "ops"))
	require.ErrorIs(t, res.Outcomes[0].Err, state.ErrWrongState)
	b.clock.Advance(2 * time.Hour)
	require.Empty(t, b.claimKeys(t, 10, 0), "the cancelled one is never claimed")
}
