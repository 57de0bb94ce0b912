package store

import (
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// RunOf tells whether m may follow head in its run (Claim.Run) as the
// message with sequence seq (head's sequence plus its place in the run): m
// has that sequence in head's queue, is pending and due or parked (not
// under a live send lease, not waiting out a failure's backoff), and is on
// head's partition (its owner sends the whole run). A message that is not
// is where the run ends. Its forward key may differ from head's: the
// forwarder then sends the run head of line.
func RunOf(head, m *state.Message, seq int64, now time.Time) bool {
	due := !m.SendNextAt.After(now)
	return m.OrderSeq == seq && OrderOf(m) == OrderOf(head) && m.Sendable() && m.Partition == head.Partition &&
		(m.LeaseToken == 0 || due) && (m.SendAttempts == 0 || due) && !m.DeliverAt.After(now)
}

// RunHead tells whether a claimed message heads a run (Claim.Run): it is
// sequenced.
func RunHead(m *state.Message) bool { return m.OrderSeq > 0 }

// Runs puts each head's run (its followers, as RunOf kept them) right after
// it: heads in their order, each followed by its run.
func Runs(heads []state.Message, runs map[int64][]state.Message) []state.Message {
	if len(runs) == 0 {
		return heads
	}
	n := len(heads)
	for _, r := range runs {
		n += len(r)
	}
	out := make([]state.Message, 0, n)
	for _, h := range heads {
		out = append(out, h)
		out = append(out, runs[h.ID]...)
	}
	return out
}

// RunBudget returns how a claim c that leased heads shares what is left of
// its limit between their runs: take(h, n) grants up to n followers to
// the run behind head h, within c.Run-1, c.Limit with the heads, and the
// cap of h's bizID in c.FairSends, if any, with its heads.
func RunBudget(heads []state.Message, c Claim) (take func(h *state.Message, n int) int) {
	left := c.Limit - len(heads)
	var bizLeft map[string]int
	if c.FairSends != nil {
		bizLeft = map[string]int{}
		for i := range heads {
			if _, ok := bizLeft[heads[i].BizID]; !ok {
				bizLeft[heads[i].BizID] = c.FairSends.Cap(heads[i].BizID, c.Limit)
			}
			bizLeft[heads[i].BizID]--
		}
	}
	return func(h *state.Message, n int) int {
		n = max(0, min(n, c.Run-1, left))
		if bizLeft != nil {
			n = max(0, min(n, bizLeft[h.BizID]))
			bizLeft[h.BizID] -= n
		}
		left -= n
		return n
	}
}
