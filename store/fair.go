package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// Fair asks a claim to share its limit between bizIDs (so that one bizID's backlog does not
// starve the others) instead of
// taking the oldest due rows first. It is the one fairness of both claims:
// Claim.FairSends (the forwarder) and Claim.FairCheckbacks (the verifier).
//
// The rule (Pick): the claim serves the bizIDs that have due rows in turn,
// by weight. A bizID's k-th row (oldest due first) comes at virtual time
// k/weight, and the claim takes the Limit rows of lowest virtual time; ties
// go to the earlier due, then the lower id, so an uneven split moves on
// between claims as the claimed rows leave. A bizID with fewer due rows
// than its share leaves the rest to the others, in the same claim (water
// filling). So one bizID's backlog of 200,000 rows takes at most its share
// of a claim while another bizID has due rows, and the whole claim when it
// is alone: batching is kept.
//
// Max caps a bizID's rows in one claim: the forwarder's rate-limit tokens
// and in-flight caps, the verifier's bizIDs held back with enough waiting
// (cap 0).
type Fair struct {
	// Weights are the bizIDs' weights; a bizID not named, or named with a
	// weight below 1, weighs 1.
	Weights map[string]int
	// Max caps how many rows of a bizID this claim may take; 0 takes none
	// of its rows, a bizID not named is capped by the claim's Limit only.
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

// Pick takes up to limit of the candidates by the rule of Fair. The
// candidates must be in claim order: oldest due first, then the lower id
// (up to limit of each bizID is enough); bizID names a candidate's bizID.
// The result is in pick order, each bizID's oldest due first. Stores that
// choose in Go call it for both claims; the PostgreSQL store does the same
// for sends in SQL, and storetest checks they agree.
func Pick[T any](f *Fair, limit int, cands []T, bizID func(*T) string) []T {
	type pick struct {
		k, w int // virtual time k/w
		i    int // position in cands: the tie-break (due, then id)
	}
	rank := map[string]int{}
	var all []pick
	for i := range cands {
		biz := bizID(&cands[i])
		k := rank[biz] + 1
		if k > f.Cap(biz, limit) {
			continue
		}
		rank[biz] = k
		all = append(all, pick{k: k, w: f.Weight(biz), i: i})
	}
	slices.SortFunc(all, func(a, b pick) int {
		return cmp.Or(cmp.Compare(a.k*b.w, b.k*a.w), cmp.Compare(a.i, b.i))
	})
	out := make([]T, 0, min(limit, len(all)))
	for _, p := range all[:min(limit, len(all))] {
		out = append(out, cands[p.i])
	}
	return out
}

// SortByDue puts messages in claim order (the order Pick wants): the
// earlier due, then the lower id.
func SortByDue(ms []state.Message, due func(*state.Message) time.Time) {
	slices.SortFunc(ms, func(a, b state.Message) int {
		return cmp.Or(due(&a).Compare(due(&b)), cmp.Compare(a.ID, b.ID))
	})
}

// BizIDOf returns m's bizID (Pick's bizID for messages).
func BizIDOf(m *state.Message) string { return m.BizID }

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
