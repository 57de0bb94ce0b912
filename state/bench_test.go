package state_test

import (
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// BenchmarkApply measures the state machine on the hot path of every
// message (go test -run '^$' -bench Apply -benchmem ./state/): a PREPARE on
// no row, a COMMIT on the prepared row, a sent mark on the committed row.
func BenchmarkApply(b *testing.B) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	body := &state.Body{Payload: make([]byte, 256), Topic: "orders", ForwardKey: "order-1",
		Verify: "http://producer/check", CheckAfter: time.Minute}
	none := state.Message{BizID: "bench", Key: "order-1", Partition: 3}
	prepared, _, err := state.Apply(none, state.Event{Kind: state.KindPrepare, At: at, Body: body})
	if err != nil {
		b.Fatal(err)
	}
	committed, _, err := state.Apply(prepared, state.Event{Kind: state.KindCommit, At: at})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		cur  state.Message
		ev   state.Event
		want state.Status
	}{
		{"prepare", none, state.Event{Kind: state.KindPrepare, At: at, Body: body}, state.Prepared},
		{"commit", prepared, state.Event{Kind: state.KindCommit, At: at}, state.Committed},
		{"sent", committed, state.Event{Kind: state.KindSent, At: at, Ref: "0@1"}, state.Committed},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, out, err := state.Apply(bc.cur, bc.ev)
				if err != nil || out.Effect != state.Changed || m.Status != bc.want {
					b.Fatalf("%s: %v %+v %v", bc.name, err, out, m.Status)
				}
			}
		})
	}
}
