package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A message's place in line counts the forwards from its commit's
// millisecond to its own forward's, both included; with self, its own
// forward is not counted.
func TestPlacesInLine(t *testing.T) {
	t.Parallel()
	at := func(ms int64) time.Time { return time.UnixMilli(1_700_000_000_000 + ms).Add(300 * time.Microsecond) }
	ms := func(m int64) int64 { return at(m).UnixMilli() }
	// The flood forwarded 10 messages at each of ms 0..99.
	var flood []int64
	for m := range int64(100) {
		for range 10 {
			flood = append(flood, ms(m))
		}
	}
	samples := []placeSample{
		{commit: at(5), produced: at(5)},   // forwarded in its commit's ms: the 10 of that ms
		{commit: at(10), produced: at(19)}, // 10 ms: 100
		{commit: at(50), produced: at(149)},
		{commit: at(200), produced: at(201)}, // after the flood: 0
	}
	p := placesInLine(samples, flood, false)
	require.Equal(t, PlaceInLine{Count: 4, P50: 10, P90: 500, P99: 500, Max: 500, Avg: 152.5}, p)

	// Alone: the forwards are the samples' own.
	own := []int64{ms(0), ms(1), ms(2), ms(2)}
	alone := []placeSample{{at(0), at(0)}, {at(0), at(1)}, {at(1), at(2)}, {at(2), at(2)}}
	p = placesInLine(alone, own, true)
	require.Equal(t, 4, p.Count)
	require.Equal(t, 1, p.P50) // 1, 2, 3, 2 counted, less self: 0, 1, 2, 1
	require.Equal(t, 2, p.Max)
	require.Equal(t, PlaceInLine{}, placesInLine(nil, flood, false))
}
