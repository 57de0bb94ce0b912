package bizshare

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

func TestCheckNamesEachField(t *testing.T) {
	for _, tc := range []struct {
		s    Share
		want []string
	}{
		{Share{}, nil},
		{Share{Weight: 3, Rate: 2.5, Burst: 5}, nil},
		{Share{Weight: -1}, []string{`Biz["a"].Weight`}},
		{Share{Rate: -2}, []string{`Biz["a"].Rate`}},
		{Share{Rate: math.NaN()}, []string{`Biz["a"].Rate`}},
		{Share{Rate: math.Inf(1)}, []string{`Biz["a"].Rate`}},
		{Share{Burst: -1}, []string{`Biz["a"].Burst`}},
		{Share{Weight: -1, Rate: -1, Burst: -1}, []string{`Biz["a"].Weight`, `Biz["a"].Rate`, `Biz["a"].Burst`}},
	} {
		var check fieldcheck.Checker
		tc.s.Check(&check, `Biz["a"]`, "messages")
		problems, others := fieldcheck.Problems(check.Err())
		require.Empty(t, others)
		var got []string
		for _, p := range problems {
			got = append(got, p.Field)
		}
		require.Equal(t, tc.want, got, "%+v", tc.s)
	}
}

func TestDefaults(t *testing.T) {
	require.Equal(t, 1, Share{}.EffectiveWeight())
	require.Equal(t, 4, Share{Weight: 4}.EffectiveWeight())
	require.Equal(t, 1, Share{}.EffectiveBurst())
	require.Equal(t, 1, Share{Rate: 0.5}.EffectiveBurst())
	require.Equal(t, 3, Share{Rate: 2.5}.EffectiveBurst())
	require.Equal(t, 7, Share{Rate: 2.5, Burst: 7}.EffectiveBurst())
}
