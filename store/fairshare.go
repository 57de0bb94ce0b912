package store

import (
	"maps"
	"slices"
)

// FairShare asks a claim to serve bizIDs in turn (issue 28): the claim's
// Limit is split between the bizIDs that have due messages in proportion
// to their weights, a bizID with fewer due messages than its share leaves
// the rest to the others (water filling), and within a bizID the oldest
// due come first. So a bizID with 100,000 stale PREPAREs takes at most
// its share of a claim while another bizID has any due, yet takes the
// whole claim when it is alone: batching is kept.
//
// Over successive claims this is a weighted round robin whose quantum is
// the share; the remainder of the integer split goes to the bizIDs in a
// rotating order (Turn), so equal weights even out across claims.
type FairShare struct {
	// Weights by bizID; a bizID not listed, or listed with a weight below
	// 1, weighs 1.
	Weights map[string]int
	// Turn rotates who gets the remainder of the split; callers increment
	// it per claim.
	Turn uint64
	// Skip lists bizIDs the claim leaves out this time (the caller holds
	// enough of theirs already).
	Skip map[string]bool
}

// Weight returns a bizID's weight (at least 1).
func (f *FairShare) Weight(bizID string) int {
	if w := f.Weights[bizID]; w > 1 {
		return w
	}
	return 1
}

// Shares splits limit between the bizIDs of avail (how many due messages
// each has, counted up to limit) by weight: no bizID gets more than it
// has, and the sum is min(limit, Σ avail).
func (f *FairShare) Shares(limit int, avail map[string]int) map[string]int {
	ids := make([]string, 0, len(avail))
	for id, n := range avail {
		if n > 0 && !f.Skip[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > 0 { // rotate: who is first for the remainder
		k := int(f.Turn % uint64(len(ids)))
		ids = append(ids[k:], ids[:k]...)
	}
	out := make(map[string]int, len(ids))
	left := limit
	// avail of a skipped bizID counts as none.
	avail = maps.Clone(avail)
	for id := range f.Skip {
		delete(avail, id)
	}
	for left > 0 {
		// The bizIDs still wanting more, and their total weight.
		open, weight := ids[:0:0], 0
		for _, id := range ids {
			if out[id] < avail[id] {
				open = append(open, id)
				weight += f.Weight(id)
			}
		}
		if len(open) == 0 {
			break
		}
		given := 0
		for _, id := range open {
			n := min(left*f.Weight(id)/weight, avail[id]-out[id])
			out[id] += n
			given += n
		}
		left -= given
		if given == 0 { // fewer left than bizIDs: one each, in turn
			for _, id := range open {
				if left == 0 {
					break
				}
				out[id]++
				left--
			}
		}
	}
	return out
}

// Pick keeps, from candidates in claim order (each bizID's oldest due
// first; at most limit per bizID is enough), those the shares of limit
// select, in the same order.
func Pick[T any](f *FairShare, limit int, candidates []T, bizID func(*T) string) []T {
	avail := map[string]int{}
	for i := range candidates {
		avail[bizID(&candidates[i])]++
	}
	shares := f.Shares(limit, avail)
	out := make([]T, 0, min(limit, len(candidates)))
	for i := range candidates {
		id := bizID(&candidates[i])
		if shares[id] > 0 {
			shares[id]--
			out = append(out, candidates[i])
		}
	}
	return out
}
