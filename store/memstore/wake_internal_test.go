package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// wake (sqlcore.WakeSQL in memory) makes a queue's parked head due, and
// never moves a head under a send lease: that one is being sent, and
// making it due would send it twice.
func TestWakeSparesALeasedHead(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	later := now.Add(30 * time.Second)
	s := New(func() time.Time { return now })
	add := func(id int64, key string, seq int64, lease int64) *state.Message {
		m := &state.Message{ID: id, BizID: "b", Key: key, OrderKey: "o", OrderSeq: seq, Status: state.Committed,
			HasBody: true, SendStatus: state.SendPending, SendNextAt: later, LeaseToken: lease}
		s.rows[store.MessageRef{BizID: "b", Key: key}] = m
		s.byID[id] = store.MessageRef{BizID: "b", Key: key}
		return m
	}
	head := add(1, "a", 1, 42) // handed over: leased, being sent
	next := add(2, "b", 2, 0)  // parked behind it

	s.wake([]int64{2}, now)
	require.Equal(t, later, head.SendNextAt, "a leased head is left alone")
	require.Equal(t, later, next.SendNextAt, "b stays parked while a holds the key")

	head.SendStatus = state.SendSent // a's sent mark, whose own wake b missed
	s.wake([]int64{2}, now)
	require.Equal(t, now, next.SendNextAt, "looking again from b's side wakes b")
}
