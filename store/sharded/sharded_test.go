package sharded_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// memShards returns a sharded store over n in-memory stores.
func memShards(t *testing.T, now func() time.Time, n int) *sharded.Store {
	t.Helper()
	var shards []sharded.Shard
	for _, b := range sharded.Even(n) {
		shards = append(shards, sharded.Shard{Store: memstore.New(now), Buckets: b})
	}
	s, err := sharded.New(shards)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// The sharded store over in-memory shards passes the conformance suite
// (2 and 3 shards).
func TestConformanceMem(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(string(rune('0'+n))+"shards", func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store { return memShards(t, now, n) })
		})
	}
}

// The bucket map must hold every bucket exactly once.
func TestMapValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{nil, "want 1 to 256 shards"},
		{[]string{"0-511", "513-1023"}, "bucket 512 is not mapped"},
		{[]string{"0-512", "512-1023"}, "bucket 512 is already mapped to shard 0"},
		{[]string{"0-1024"}, "outside 0-1023"},
		{[]string{"5-1"}, "reversed"},
		{[]string{"0-10,,11-1023"}, "empty range"},
		{[]string{"x"}, "bad bucket"},
	} {
		_, err := sharded.NewMap(tc.specs)
		require.ErrorContains(t, err, tc.want, "%v", tc.specs)
	}
	m, err := sharded.NewMap([]string{"0-99, 200-1023", "100-199"})
	require.NoError(t, err)
	require.Equal(t, 1, m[150])
	require.Equal(t, 0, m[99])
	_, err = sharded.New([]sharded.Shard{{Buckets: "0-1023"}})
	require.ErrorContains(t, err, "shard 0 has no store")
	// The hash is stable: a fixed key keeps its bucket forever.
	require.Equal(t, sharded.Bucket("shop", "order-1"), sharded.Bucket("shop", "order-1"))
	require.NotEqual(t, sharded.Bucket("shop", "order-1"), sharded.Bucket("shop", "order-2"))
}

// keyOn returns a key of bizID "shop" on the given shard.
func keyOn(t *testing.T, s *sharded.Store, shard int, prefix string) string {
	t.Helper()
	m := s.Map()
	for i := range 10000 {
		k := prefix + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		if m.Shard("shop", k) == shard {
			return k
		}
	}
	t.Fatal("no key on shard")
	return ""
}

// A batch over two shards of which one fails: the error is returned (the
// caller does not commit its offsets), the other shard's part is
// committed, and the replay of the whole batch completes it without
// applying anything twice.
func TestApplyOneShardFails(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	inner := []*memstore.Store{memstore.New(clock.Now), memstore.New(clock.Now)}
	s, err := sharded.New([]sharded.Shard{{Store: inner[0], Buckets: "0-511"}, {Store: inner[1], Buckets: "512-1023"}})
	require.NoError(t, err)
	k0, k1 := keyOn(t, s, 0, "a"), keyOn(t, s, 1, "b")
	batch := store.ApplyRequest{SendLease: time.Minute, Changes: []store.Change{
		storetest.Prepare("shop", k0, 0, clock.Now()), storetest.Commit("shop", k0, 0, clock.Now()),
		storetest.Prepare("shop", k1, 0, clock.Now()), storetest.Commit("shop", k1, 0, clock.Now()),
	}}
	inner[1].FailApply(errors.New("connection reset"))
	_, err = s.Apply(t.Context(), batch)
	require.ErrorContains(t, err, "shard 1: ")
	require.ErrorContains(t, err, "connection reset")
	_, err = s.Get(t.Context(), "shop", k0)
	require.NoError(t, err, "shard 0 committed its part")
	_, err = s.Get(t.Context(), "shop", k1)
	require.ErrorIs(t, err, store.ErrNotFound)

	res, err := s.Apply(t.Context(), batch) // the replay
	require.NoError(t, err)
	require.Len(t, res.Outcomes, 4)
	require.Len(t, res.Sendable, 1, "only the failed shard's message becomes sendable now")
	require.Equal(t, k1, res.Sendable[0].Key)
	// MarkSent finds the shard from the ID.
	require.NoError(t, s.MarkSent(t.Context(), []store.Sent{{ID: res.Sendable[0].ID, Ref: "r"}}))
	m, err := s.Get(t.Context(), "shop", k1)
	require.NoError(t, err)
	require.Equal(t, res.Sendable[0].ID, m.ID)
	require.Equal(t, "r", m.SendRef)
	require.ErrorContains(t, s.MarkSent(t.Context(), []store.Sent{{ID: 7<<8 | 9, Ref: "r"}}), "belongs to no shard")
	// With several shards (no per-key order) MarkSentClaimNext only marks.
	next, woken, err := s.MarkSentClaimNext(t.Context(), []store.Sent{{ID: res.Sendable[0].ID, Ref: "r2", Ordered: true}},
		store.Claim{Partitions: []int32{0, 1}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, 1, woken, "not counted: every ordered mark may have woken one")
	require.NoError(t, s.Close())
}

// Claims spread the limit over the shards and give what one shard leaves
// unused to the others; a cursor made for another number of shards is
// refused.
func TestClaimsAndCursor(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	s := memShards(t, clock.Now, 2)
	var changes []store.Change
	for i := range 6 {
		k := keyOn(t, s, 0, "c"+string(rune('a'+i)))
		changes = append(changes, storetest.Prepare("shop", k, 0, clock.Now()), storetest.Commit("shop", k, 0, clock.Now()))
	}
	k := keyOn(t, s, 1, "d")
	changes = append(changes, storetest.Prepare("shop", k, 0, clock.Now()), storetest.Commit("shop", k, 0, clock.Now()))
	_, err := s.Apply(t.Context(), store.ApplyRequest{Changes: changes}) // due now, not leased
	require.NoError(t, err)
	ms, err := s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 4, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, ms, 4, "shard 1 has one; shard 0 fills the rest")
	ms2, err := s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, ms2, 3)

	three := memShards(t, clock.Now, 3)
	p, err := three.List(t.Context(), store.Filter{Limit: 1})
	require.NoError(t, err)
	_, err = three.List(t.Context(), store.Filter{Limit: 1, Cursor: p.Next})
	require.NoError(t, err)
	p, err = s.List(t.Context(), store.Filter{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	_, err = three.List(t.Context(), store.Filter{Cursor: p.Next})
	require.ErrorContains(t, err, "made for 2 shards, there are 3")
}

// A store of one shard keeps per-key order as its shard does; several
// shards refuse it rather than keep it per shard only.
func TestOrder(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOrder(t, func(t *testing.T, now func() time.Time) store.Store { return memShards(t, now, 1) })
	s := memShards(t, time.Now, 2)
	_, err := s.Apply(t.Context(), store.ApplyRequest{Ordered: true, Changes: []store.Change{storetest.Commit("b", "k", 0, time.Now())}})
	require.ErrorIs(t, err, sharded.ErrOrderAcrossShards)
	_, err = s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 1, Lease: time.Second, Ordered: true})
	require.ErrorIs(t, err, sharded.ErrOrderAcrossShards)
	_, err = s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 1, Lease: time.Second})
	require.NoError(t, err, "unordered claims as before")
}

// A sharded store of one shard passes the fair-claim suite exactly; with
// several shards each shard is fair within itself, and the caps hold over
// all of them.
func TestFair(t *testing.T) {
	t.Parallel()
	storetest.ExerciseFair(t, func(t *testing.T, now func() time.Time) store.Store { return memShards(t, now, 1) })
}

// A fair claim's caps hold over the shards, for sends and check-backs.
func TestFairCapsAcrossShards(t *testing.T) {
	t.Parallel()
	for _, checkbacks := range []bool{false, true} {
		t.Run(fmt.Sprint("checkbacks=", checkbacks), func(t *testing.T) {
			t.Parallel()
			testFairCapsAcrossShards(t, checkbacks)
		})
	}
}

func testFairCapsAcrossShards(t *testing.T, checkbacks bool) {
	clock := storetest.NewClock()
	s := memShards(t, clock.Now, 3)
	var cs []store.Change
	for _, biz := range []string{"a", "b", "c"} {
		for _, k := range storetest.Keys(biz, 60) {
			cs = append(cs, storetest.Prepare(biz, k, 0, clock.Now()))
			if !checkbacks {
				cs = append(cs, storetest.Commit(biz, k, 0, clock.Now()))
			}
		}
	}
	_, err := s.Apply(t.Context(), store.ApplyRequest{Changes: cs})
	require.NoError(t, err)
	clock.Advance(time.Hour) // the check-backs are due
	total := map[string]int{}
	for range 200 {
		c := store.Claim{Partitions: []int32{0}, Limit: 20, Lease: 2 * time.Hour}
		fair := &store.Fair{Max: map[string]int{"a": 5, "b": 0}}
		claim := s.ClaimSends
		if checkbacks {
			c.FairCheckbacks, claim = fair, s.ClaimCheckbacks
		} else {
			c.FairSends = fair
		}
		got, err := claim(t.Context(), c)
		require.NoError(t, err)
		n := map[string]int{}
		for _, m := range got {
			n[m.BizID]++
			total[m.BizID]++
		}
		require.LessOrEqual(t, n["a"], 5, "a's cap holds over the shards")
		require.Zero(t, n["b"])
		if len(got) == 0 {
			break
		}
		require.Positive(t, n["a"], "a has its share while rows are due")
	}
	require.Equal(t, map[string]int{"a": 60, "c": 60}, total)
}
