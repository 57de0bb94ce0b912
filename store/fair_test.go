package store_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
)

// cands returns avail's candidates in claim order, interleaved by rank
// (a1 b1 a2 b2 ...; bizIDs in the order given): "a3" is a's third oldest.
func cands(order []string, avail map[string]int) []string {
	var out []string
	for k := 1; ; k++ {
		n := len(out)
		for _, id := range order {
			if k <= avail[id] {
				out = append(out, fmt.Sprint(id, k))
			}
		}
		if len(out) == n {
			return out
		}
	}
}

func count(picked []string) map[string]int {
	n := map[string]int{}
	for _, p := range picked {
		n[p[:1]]++
	}
	return n
}

// The one rule of both fair claims (sends and check-backs): shares by
// weight, water filling, caps.
func TestPick(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		fair  store.Fair
		limit int
		avail map[string]int
		want  map[string]int
	}{
		{"equal", store.Fair{}, 10, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 5, "b": 5}},
		{"the unused share goes to the others", store.Fair{}, 10, map[string]int{"a": 100, "b": 2}, map[string]int{"a": 8, "b": 2}},
		{"alone takes all", store.Fair{}, 10, map[string]int{"a": 100}, map[string]int{"a": 10}},
		{"less than the limit", store.Fair{}, 10, map[string]int{"a": 3, "b": 2}, map[string]int{"a": 3, "b": 2}},
		{"weighted", store.Fair{Weights: map[string]int{"a": 3}}, 8, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 6, "b": 2}},
		{"weighted both", store.Fair{Weights: map[string]int{"a": 1, "b": 4}}, 10, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 2, "b": 8}},
		{"weight below 1 weighs 1", store.Fair{Weights: map[string]int{"a": -2, "b": 0}}, 4, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 2, "b": 2}},
		{"more bizIDs than the limit: the older first", store.Fair{}, 2, map[string]int{"a": 1, "b": 1, "c": 1}, map[string]int{"a": 1, "b": 1}},
		{"nothing due", store.Fair{}, 5, map[string]int{"a": 0}, map[string]int{}},
		{"capped", store.Fair{Max: map[string]int{"a": 2}}, 10, map[string]int{"a": 100, "b": 100}, map[string]int{"a": 2, "b": 8}},
		{"capped at 0 takes none", store.Fair{Max: map[string]int{"a": 0}}, 10, map[string]int{"a": 100, "b": 3}, map[string]int{"b": 3}},
		{"a cap above the limit is the limit", store.Fair{Max: map[string]int{"a": 50}}, 10, map[string]int{"a": 100}, map[string]int{"a": 10}},
		{"a negative cap takes none", store.Fair{Max: map[string]int{"a": -1}}, 10, map[string]int{"a": 100, "b": 100}, map[string]int{"b": 10}},
		{"cap and weight", store.Fair{Weights: map[string]int{"a": 3}, Max: map[string]int{"a": 3}}, 8, map[string]int{"a": 100, "b": 100, "c": 100}, map[string]int{"a": 3, "b": 3, "c": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := store.Pick(&c.fair, c.limit, cands([]string{"a", "b", "c"}, c.avail), func(s *string) string { return (*s)[:1] })
			require.Equal(t, c.want, count(got))
		})
	}
}

// The result is in pick order (virtual time, then claim order), each
// bizID's oldest first.
func TestPickOrder(t *testing.T) {
	t.Parallel()
	in := []string{"a1", "a2", "b1", "a3", "b2", "a4"}
	got := store.Pick(&store.Fair{}, 4, in, func(s *string) string { return (*s)[:1] })
	require.Equal(t, []string{"a1", "b1", "a2", "b2"}, got)
	got = store.Pick(&store.Fair{Weights: map[string]int{"a": 2}}, 4, in, func(s *string) string { return (*s)[:1] })
	require.Equal(t, []string{"a1", "a2", "b1", "a3"}, got, "a2 (2/2) ties b1 (1/1): the earlier in claim order")
}

// Ties go to the older due, so over claims an odd split evens out as the
// claimed rows leave.
func TestPickTiesEvenOut(t *testing.T) {
	t.Parallel()
	// due order: a1 b1 a2 b2 a3 b3 ...; each claim of 1 takes the oldest.
	in := cands([]string{"a", "b"}, map[string]int{"a": 3, "b": 3})
	total := map[string]int{}
	for range 4 {
		got := store.Pick(&store.Fair{}, 1, in, func(s *string) string { return (*s)[:1] })
		require.Len(t, got, 1)
		total[got[0][:1]]++
		in = slices.DeleteFunc(in, func(s string) bool { return s == got[0] })
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2}, total)
}
