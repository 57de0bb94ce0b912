package sqlcore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

func TestCodesComeFromState(t *testing.T) {
	t.Parallel()
	require.Equal(t, strconv.Itoa(int(state.Committed)), Committed)
	require.Equal(t, "status = "+Committed+" AND send_status = "+SendPending+" AND has_body = 1", PendingSend("has_body = 1"))
	require.Equal(t, "m.send_status = "+SendSent+", m.sent_at = ?, m.updated_at = ?, m.send_ref = r, m.last_error = ''",
		MarkSentSet(func(c string) string { return "m." + c }, "?", "r"))
	require.Equal(t, "(?, ?), (?, ?)", Values(2, 2))
	require.Equal(t, "?, ?, ?", List(3))
}

// recordDB records the statement it is asked to run and returns no rows.
type recordDB struct {
	q    string
	args []any
}

func (d *recordDB) Query(_ context.Context, q string, args ...any) (Rows, error) {
	d.q, d.args = q, args
	return noRows{}, nil
}

func (d *recordDB) QueryRow(context.Context, string, ...any) Row { panic("not used") }

type noRows struct{}

func (noRows) Scan(...any) error { return errors.New("no row") }
func (noRows) Next() bool        { return false }
func (noRows) Err() error        { return nil }
func (noRows) Close()            {}

var testDialect = &Dialect[time.Time]{
	Param:       func(n int) string { return "$" + strconv.Itoa(n) },
	Columns:     codec.Columns,
	PayloadSize: "size(payload)",
	HasBody:     "has_body",
	ListOrphan:  IsOrphan("NOT has_body"),
	KeyContains: "strpos(message_key, %s) > 0",
	TimeArg:     func(t time.Time) any { return t.Unix() },
	Time:        func(t *time.Time) time.Time { return *t },
}

func TestListStatement(t *testing.T) {
	t.Parallel()
	db := &recordDB{}
	sent := state.SendSent
	at := time.Unix(1000, 0)
	p, err := testDialect.List(t.Context(), db, store.Filter{Cursor: codec.EncodeCursor(9), BizID: "b", Status: state.Committed,
		SendStatus: &sent, KeyContains: "k", CreatedBefore: at, Orphan: true, Limit: 5})
	require.NoError(t, err)
	require.Empty(t, p.Messages)
	require.NotContains(t, db.q, "payload,")
	require.NotContains(t, db.q, "headers")
	require.Contains(t, db.q, "has_body, size(payload), target")
	require.True(t, strings.HasSuffix(db.q, " WHERE id < $1 AND biz_id = $2 AND status = $3 AND send_status = $4"+
		" AND strpos(message_key, $5) > 0 AND created_at < $6 AND status = "+Committed+" AND NOT has_body ORDER BY id DESC LIMIT $7"), db.q)
	require.Equal(t, []any{int64(9), "b", int16(state.Committed), int16(sent), "k", int64(1000), 6}, db.args)

	_, err = testDialect.List(t.Context(), db, store.Filter{Cursor: "bad"})
	require.ErrorIs(t, err, codec.ErrBadCursor)
}

// fakeTx is a driver with one transaction over rows in memory; its first
// fails writes fail with failWith.
type fakeTx struct {
	rows     []state.Message
	fails    int
	failWith error
	writes   int
	loads    []int64
}

func (f *fakeTx) InTx(_ context.Context, fn func(Tx) error) error { return fn(f) }

func (f *fakeTx) AssignSeqs(context.Context, []*state.Message) error { return nil }

func (f *fakeTx) Holders(context.Context, []store.OrderRef, []int64) (map[store.OrderRef]int64, error) {
	return nil, nil
}

func (f *fakeTx) Wake(context.Context, []int64, time.Time) (int, error) { return 0, nil }

func (f *fakeTx) Load(context.Context, []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	return map[store.MessageRef]*state.Message{}, nil
}

func (f *fakeTx) LoadRetryNow(_ context.Context, _ string, after int64, limit int) ([]state.Message, error) {
	f.loads = append(f.loads, after)
	var out []state.Message
	for _, m := range f.rows {
		if m.ID > after && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeTx) Write(context.Context, map[store.MessageRef]*state.Message, *store.Folded) error {
	f.writes++
	if f.fails > 0 {
		f.fails--
		return f.failWith
	}
	return nil
}

func prepareChange() store.ApplyRequest {
	return store.ApplyRequest{Changes: []store.Change{{BizID: "b", Key: "k", Event: state.Event{
		Kind: state.KindPrepare, At: time.Unix(1, 0), Body: &state.Body{Payload: []byte("p")}}}}}
}

func TestApplyRetries(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	never := func(error) bool { return false }

	f := &fakeTx{fails: 2, failWith: ErrInsertRace}
	c, err := NewCore("test", f, nil, nil, 3, never, nil)
	require.NoError(t, err)
	res, err := c.Apply(t.Context(), prepareChange())
	require.NoError(t, err, "a concurrent insert is tried again")
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, 3, f.writes)

	f = &fakeTx{fails: 3, failWith: ErrInsertRace}
	c, _ = NewCore("test", f, nil, nil, 3, never, nil)
	_, err = c.Apply(t.Context(), prepareChange())
	require.ErrorIs(t, err, ErrInsertRace)
	require.ErrorContains(t, err, "apply (try 3)")

	f = &fakeTx{fails: 1, failWith: boom}
	c, _ = NewCore("test", f, nil, nil, 3, never, func(err error) error { return errors.New("translated " + err.Error()) })
	_, err = c.Apply(t.Context(), prepareChange())
	require.EqualError(t, err, "apply (try 1): translated boom")
	require.Equal(t, 1, f.writes)

	f = &fakeTx{fails: 1, failWith: boom}
	c, _ = NewCore("test", f, nil, nil, 0, nil, nil)
	_, err = c.Apply(t.Context(), prepareChange())
	require.EqualError(t, err, "apply: boom", "no retries without retryable")

	_, err = NewCore("test", f, nil, nil, -1, nil, nil)
	require.EqualError(t, err, "test options: ApplyTries must not be negative")
}

func TestRetryNowChunks(t *testing.T) {
	t.Parallel()
	f := &fakeTx{}
	for i := range RetryNowChunk + 3 {
		f.rows = append(f.rows, state.Message{ID: int64(i + 1), BizID: "b", Key: strconv.Itoa(i), Status: state.Prepared})
	}
	c, _ := NewCore("test", f, nil, nil, 0, nil, nil)
	n, err := c.RetryNowBizID(t.Context(), "b", store.Actor{Who: "op"})
	require.NoError(t, err)
	require.Equal(t, RetryNowChunk+3, n)
	require.Equal(t, []int64{0, RetryNowChunk}, f.loads, "a full chunk, then the rest after its last id")

	f = &fakeTx{rows: f.rows, fails: 1, failWith: errors.New("boom")}
	c, _ = NewCore("test", f, nil, nil, 0, nil, nil)
	n, err = c.RetryNowBizID(t.Context(), "b", store.Actor{Who: "op"})
	require.EqualError(t, err, "retry now b: boom")
	require.Zero(t, n, "a failed chunk is not counted")
}

func TestTranslated(t *testing.T) {
	t.Parallel()
	require.NoError(t, Translated(nil, nil))
	driverErr := errors.New("driver")
	err := Translated(errors.Join(driverErr, context.Canceled, ErrInsertRace), []error{store.ErrNotFound}, ErrInsertRace)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, ErrInsertRace)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NotErrorIs(t, err, driverErr, "driver errors do not stay reachable")
	require.Equal(t, errors.Join(driverErr, context.Canceled, ErrInsertRace).Error(), err.Error())
}

// freed lists the heads a batch freed and, so that the wake after the
// commit looks again, the rows it parked; never a row without an id or
// one of a queue it did not park.
func TestFreedIncludesParkedRows(t *testing.T) {
	t.Parallel()
	q := store.OrderRef{BizID: "b", OrderKey: "o"}
	msg := func(id int64, key, orderKey string, seq int64, st state.SendStatus) *state.Message {
		return &state.Message{ID: id, BizID: "b", Key: key, OrderKey: orderKey, OrderSeq: seq,
			Status: state.Committed, HasBody: true, SendStatus: st}
	}
	headBefore := msg(1, "a", "o", 1, state.SendPending)
	loaded := map[store.MessageRef]*state.Message{{BizID: "b", Key: "a"}: headBefore}
	f := store.Folded{
		Updates: []*state.Message{msg(1, "a", "o", 1, state.SendSent)},
		Inserts: []*state.Message{msg(7, "c", "o", 3, state.SendPending), msg(0, "d", "o", 4, state.SendPending),
			msg(8, "x", "other", 1, state.SendPending)},
	}
	require.ElementsMatch(t, []int64{1, 7}, freed(loaded, &f, map[store.OrderRef]bool{q: true}))
	require.Contains(t, WakeSQL(func(n int) string { return "$" + strconv.Itoa(n) }, 1), "lease_token = 0")
}

// CompareQueues must keep the lock order of earlier releases (the joined
// strings), or a mixed cluster's batches could lock counters in opposite
// orders.
func TestCompareQueuesIsTheJoinedOrder(t *testing.T) {
	t.Parallel()
	parts := []string{"", "a", "ab", "b", "a\x01", "é", "A"}
	var qs []store.OrderRef
	for _, b := range parts {
		for _, k := range parts {
			for _, tg := range parts[:3] {
				for _, tp := range parts[:3] {
					qs = append(qs, store.OrderRef{BizID: b, OrderKey: k, Target: tg, Topic: tp})
				}
			}
		}
	}
	joined := func(r store.OrderRef) string {
		return r.BizID + "\x00" + r.OrderKey + "\x00" + r.Target + "\x00" + r.Topic
	}
	for _, a := range qs {
		for _, b := range qs {
			if got, want := CompareQueues(a, b), strings.Compare(joined(a), joined(b)); got != want {
				t.Fatalf("CompareQueues(%q, %q) = %d, the joined strings compare %d", joined(a), joined(b), got, want)
			}
		}
	}
}
