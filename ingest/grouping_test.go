package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/state"
)

func batchOf(partition int32, n int) *batch {
	b := &batch{partition: partition}
	for i := range n {
		b.records = append(b.records, &kgo.Record{Partition: partition, Offset: int64(i)})
	}
	return b
}

func TestGroupBatches(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		sizes       []int
		parallelism int
		minRecords  int
		want        [][]int32 // partitions per group, in group order
	}{
		{"light load: one transaction for every partition", []int{10, 20, 5, 1}, 4, 500, [][]int32{{1, 0, 2, 3}}},
		{"one partition", []int{5000}, 4, 500, [][]int32{{0}}},
		{"heavy load: as many groups as parallelism", []int{900, 800, 700, 600, 500, 400, 300, 200}, 4, 500,
			[][]int32{{0, 7}, {1, 6}, {2, 5}, {3, 4}}},
		{"groups of at least minRecords", []int{300, 300, 300, 300}, 4, 500, [][]int32{{0, 2}, {1, 3}}},
		{"parallelism 1", []int{900, 800, 700}, 1, 500, [][]int32{{0, 1, 2}}},
		{"no more groups than partitions", []int{4000, 4000}, 8, 500, [][]int32{{0}, {1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bs []*batch
			total := 0
			for i, n := range c.sizes {
				bs = append(bs, batchOf(int32(i), n))
				total += n
			}
			gs := groupBatches(bs, c.parallelism, c.minRecords)
			var got [][]int32
			sum := 0
			for _, g := range gs {
				got = append(got, g.partitions())
				n := 0
				for _, b := range g.batches {
					n += len(b.records)
				}
				require.Equal(t, n, g.records, "group record count")
				sum += n
			}
			require.Equal(t, c.want, got)
			require.Equal(t, total, sum, "every record in exactly one group")
		})
	}
}

func TestPollOfSeveralPartitionsAppliedInOneTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4)
	st, fwd := newMemStore(), &handoffs{}
	// Everything is in the topic before the ingester starts, so its first
	// poll holds all four partitions, far fewer records than
	// MinApplyRecords: one store transaction.
	e.lifecycle("shop", 0, 40)
	e.start(e.config(), st, fwd, NewOwnership())

	require.Eventually(t, e.committedAll, waitFor, tick)
	require.Equal(t, 40, st.countStatus(state.Committed, true))
	st.mu.Lock()
	defer st.mu.Unlock()
	parts := map[int32]bool{}
	for _, c := range st.applies[0].Changes {
		parts[c.Partition] = true
	}
	require.Greater(t, len(parts), 1, "the first transaction holds several partitions")
	require.Less(t, len(st.applies), 4, "fewer transactions than partitions")
}
