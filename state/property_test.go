package state

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArrivalOrderDoesNotMatter checks the promise the table is built for:
// for random interleavings and duplications of one message's envelopes, the
// outcome is what the table says whatever the arrival order — the first
// decision wins, the body is always kept, a committed message becomes
// sendable exactly once (or, scheduled, due at its deliver-at), a cancel
// ends a committed message CANCELLED and a rolled-back one ROLLED_BACK
// whatever the order, and replaying the whole sequence changes nothing.
func TestArrivalOrderDoesNotMatter(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	for iter := range 20000 {
		var seq []Kind
		for range 1 + rng.IntN(3) {
			seq = append(seq, KindPrepare)
		}
		decisions := []Kind{KindCommit, KindRollback}
		first := decisions[rng.IntN(2)] // the producer's decision
		for range 1 + rng.IntN(3) {
			seq = append(seq, first)
		}
		cancels := rng.IntN(3) == 0 // sometimes the producer cancels too
		if cancels {
			for range 1 + rng.IntN(2) {
				seq = append(seq, KindCancel)
			}
		} else if rng.IntN(4) == 0 { // sometimes a contradicting decision (buggy producer)
			seq = append(seq, decisions[rng.IntN(len(decisions))])
		}
		rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
		// Check-back answers tell the producer's truth and can only come
		// after a PREPARE created the row: put some anywhere after the first.
		check := KindCheckCommit
		if first == KindRollback {
			check = KindCheckRollback
		}
		for range rng.IntN(3) {
			firstPrepare := 0
			for seq[firstPrepare] != KindPrepare {
				firstPrepare++
			}
			at := firstPrepare + 1 + rng.IntN(len(seq)-firstPrepare)
			seq = append(seq[:at], append([]Kind{check}, seq[at:]...)...)
		}

		wantStatus := Committed
		for _, k := range seq {
			if k != KindPrepare && k != KindCancel {
				if k == KindRollback || k == KindCheckRollback {
					wantStatus = RolledBack
				}
				break
			}
		}

		// Half the messages carry an order key: it comes with the body
		// whatever the order, and the message needs a sequence exactly
		// when it is sendable.
		// A third are scheduled: never due at once, never sequenced.
		ob := *body
		if rng.IntN(2) == 0 {
			ob.OrderKey = "o-1"
		}
		scheduledMsg := rng.IntN(3) == 0
		if scheduledMsg {
			ob.DeliverAt = t0.Add(time.Hour)
		}
		b := &ob
		if cancels && wantStatus == Committed {
			wantStatus = Cancelled
		}
		m := Message{BizID: "b", Key: "k"}
		sendables, conflicts := 0, 0
		at := t0
		for _, k := range seq {
			at = at.Add(time.Millisecond)
			var out Outcome
			var err error
			m, out, err = Apply(m, Event{Kind: k, At: at, Body: b})
			require.NoError(t, err)
			if out.Sendable {
				sendables++
			}
			if out.Effect == Conflict {
				conflicts++
			}
		}
		require.Equal(t, wantStatus, m.Status, "iteration %d: %v", iter, seq)
		require.True(t, m.HasBody, "iteration %d: %v", iter, seq)
		require.Equal(t, body.Payload, m.Payload)
		require.Equal(t, b.OrderKey, m.OrderKey)
		require.Equal(t, b.OrderKey != "" && wantStatus == Committed && !scheduledMsg, m.NeedsOrderSeq(), "iteration %d: %v", iter, seq)
		require.Equal(t, conflicts, m.Conflicts)
		switch {
		case wantStatus == Committed && scheduledMsg:
			require.Zero(t, sendables, "iteration %d: %v: a scheduled message is never due at once", iter, seq)
			require.True(t, m.Sendable())
			require.Equal(t, b.DeliverAt, m.SendNextAt, "iteration %d: %v: due at its deliver-at", iter, seq)
		case wantStatus == Committed:
			require.Equal(t, 1, sendables, "iteration %d: %v: sendable exactly once", iter, seq)
			require.True(t, m.Sendable())
		case wantStatus == Cancelled:
			require.LessOrEqual(t, sendables, 1, "iteration %d: %v", iter, seq)
			require.False(t, m.Sendable(), "iteration %d: %v: a cancelled message is never sent", iter, seq)
		default:
			require.Zero(t, sendables, "iteration %d: %v: a rolled-back message is never sendable", iter, seq)
		}

		// Crash replay: the same envelopes again change nothing but the
		// conflict counter of contradicting ones.
		replayed := m
		for _, k := range seq {
			var out Outcome
			replayed, out, _ = Apply(replayed, Event{Kind: k, At: at, Body: b})
			require.False(t, out.Sendable, "replay made it sendable again: %v", seq)
			require.NotEqual(t, Changed, out.Effect, "replay changed the row: %v", seq)
		}
		require.Equal(t, m.Status, replayed.Status)
	}
}
