package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
)

func TestFairShares(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		weights map[string]int
		limit   int
		avail   map[string]int
		want    map[string]int
	}{
		{"equal", nil, 10, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 5, "b": 5}},
		{"the unused share goes to the others", nil, 10, map[string]int{"a": 100, "b": 2}, map[string]int{"a": 8, "b": 2}},
		{"alone takes all", nil, 10, map[string]int{"a": 100}, map[string]int{"a": 10}},
		{"less than the limit", nil, 10, map[string]int{"a": 3, "b": 2}, map[string]int{"a": 3, "b": 2}},
		{"weighted", map[string]int{"a": 3}, 8, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 6, "b": 2}},
		{"weight below 1 weighs 1", map[string]int{"a": -2}, 4, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 2, "b": 2}},
		{"more bizIDs than the limit", nil, 2, map[string]int{"a": 1, "b": 1, "c": 1}, map[string]int{"a": 1, "b": 1}},
		{"nothing due", nil, 5, map[string]int{"a": 0}, map[string]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := &store.FairShare{Weights: c.weights}
			got := f.Shares(c.limit, c.avail)
			for id, n := range got {
				if n == 0 {
					delete(got, id)
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestFairSharesSkip(t *testing.T) {
	t.Parallel()
	f := &store.FairShare{Skip: map[string]bool{"a": true}}
	require.Equal(t, map[string]int{"b": 3}, f.Shares(10, map[string]int{"a": 100, "b": 3}))
}

// Over successive claims the remainder of an uneven split rotates.
func TestFairSharesTurn(t *testing.T) {
	t.Parallel()
	total := map[string]int{}
	for turn := range uint64(6) {
		f := &store.FairShare{Turn: turn}
		for id, n := range f.Shares(1, map[string]int{"a": 5, "b": 5, "c": 5}) {
			total[id] += n
		}
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 2}, total)
}

func TestPickKeepsOrder(t *testing.T) {
	t.Parallel()
	in := []string{"a1", "a2", "b1", "a3", "b2", "a4"}
	got := store.Pick(&store.FairShare{}, 4, in, func(s *string) string { return (*s)[:1] })
	require.Equal(t, []string{"a1", "a2", "b1", "b2"}, got)
}
