package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// Fair asks a claim to share its limit between bizIDs (issue 28) instead of
// taking the oldest due rows first. The claim serves the bizIDs that have
// due rows in turn, by weight: a bizID's k-th row (oldest due first) comes
// at virtual time k/weight, and the claim takes the Limit rows of lowest
// virtual time (ties: the earlier due, then the lower id). A bizID with
// fewer due rows than its share leaves the rest to the others, in the same
// claim. So one bizID's backlog of 200,000 rows takes at most its share of
// a claim while another bizID has due rows, and the whole claim when it is
// alone.
//
// It is one type for both claims: ClaimSends (the forwarder) reads it;
// a check-back claim may read it the same way.
type Fair struct {
	// Weights are the bizIDs' weights (positive); a bizID not named has
	// weight 1.
	Weights map[string]int
	// Max caps how many rows of a bizID this claim may take (a rate limit's
	// tokens, a cap on messages in flight); 0 takes none of its rows, a
	// bizID not named is capped by Limit only.
	Max map[string]int
}

// Weight returns biz's weight (1 when not named or not positive).
func (f *Fair) Weight(biz string) int {
	if w, ok := f.Weights[biz]; ok && w > 0 {
		return w
	}
	return 1
}

// Cap returns the most rows of biz a claim of limit may take.
func (f *Fair) Cap(biz string, limit int) int {
	if m, ok := f.Max[biz]; ok {
		return max(0, min(m, limit))
	}
	return limit
}

// PickFair takes up to limit messages from the candidates of each bizID,
// each list due-ordered (oldest first, as a claim reads them), by the rule
// of Fair. due returns a candidate's due time. The result is in pick order.
// Stores that choose in Go call it; the PostgreSQL store does the same in
// SQL, and storetest checks both agree.
func PickFair(cands map[string][]state.Message, limit int, f *Fair, due func(*state.Message) int64) []state.Message {
	type pick struct {
		num, den int // virtual time num/den
		due      int64
		m        *state.Message
	}
	var all []pick
	for biz, ms := range cands {
		w := f.Weight(biz)
		for i := range ms[:min(len(ms), f.Cap(biz, limit))] {
			all = append(all, pick{num: i + 1, den: w, due: due(&ms[i]), m: &ms[i]})
		}
	}
	slices.SortFunc(all, func(a, b pick) int {
		return cmp.Or(cmp.Compare(a.num*b.den, b.num*a.den), cmp.Compare(a.due, b.due), cmp.Compare(a.m.ID, b.m.ID))
	})
	out := make([]state.Message, 0, min(limit, len(all)))
	for _, p := range all[:min(limit, len(all))] {
		out = append(out, *p.m)
	}
	return out
}

// BizBacklog is one bizID's sends not done yet: committed messages with a
// body, pending (store.Backlogger).
type BizBacklog struct {
	BizID string
	// Pending counts them all: due, leased (being sent), scheduled or
	// waiting for a retry.
	Pending int64
	// Due counts those due now and not leased: waiting for a claim.
	Due int64
	// OldestDue is the earliest due time of the Due ones (zero when Due
	// is 0): how long the oldest has waited for its turn.
	OldestDue time.Time
}

// Backlogger is implemented by the stores that tell the send backlog per
// bizID (every store of this repository): the operator's fair-share view
// and its gauges.
type Backlogger interface {
	// SendBacklog returns the backlog of every bizID with pending sends,
	// by bizID.
	SendBacklog(ctx context.Context) ([]BizBacklog, error)
}
