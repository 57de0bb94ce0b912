package sqlcore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// fakeRows are n rows of Columns: row i has id i, key "k", status
// committed and creation time i seconds, as a driver would scan them
// (into the destinations' own types, without allocating).
type fakeRows struct {
	n, at int
	extra bool // the rows carry one column of the driver's own
}

func (r *fakeRows) Next() bool { r.at++; return r.at <= r.n }
func (r *fakeRows) Err() error { return nil }
func (r *fakeRows) Close()     {}

func (r *fakeRows) Scan(dest ...any) error {
	want := len(codecColumns)
	if r.extra {
		want++
	}
	if len(dest) != want {
		return fmt.Errorf("scan into %d destinations, the row has %d columns", len(dest), want)
	}
	for i, d := range dest {
		switch p := d.(type) {
		case *int64:
			*p = int64(r.at)
		case *string:
			*p = "k"
		case *int16:
			if codecColumns[i] == "status" {
				*p = int16(state.Committed)
			}
		case *int32, *bool, *[]byte:
		case *time.Time:
			*p = time.Unix(int64(r.at), 0)
		case *int:
			*p = r.at
		default:
			return fmt.Errorf("column %d: unexpected destination %T", i, d)
		}
	}
	return nil
}

// countExtra is an ExtraScan that counts the rows it set.
type countExtra struct {
	v    int
	dest [1]any
}

func (c *countExtra) Dest() []any { return c.dest[:] }
func (c *countExtra) Set(m *state.Message) {
	m.OrderSeq = int64(c.v) // what the extra column held, set after the scan
}

func TestCollectMessagesReadsEveryRowInPlace(t *testing.T) {
	t.Parallel()
	d := *testDialect
	d.Extra = func() ExtraScan {
		c := &countExtra{}
		c.dest[0] = &c.v
		return c
	}
	ms, err := d.CollectMessages(&fakeRows{n: 3, extra: true}, 0)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	for i, m := range ms {
		require.Equal(t, int64(i+1), m.ID)
		require.Equal(t, "k", m.Key)
		require.Equal(t, state.Committed, m.Status)
		require.Equal(t, time.Unix(int64(i+1), 0), m.CreatedAt)
		require.Equal(t, int64(i+1), m.OrderSeq, "the extra scan's Set ran for row %d", i)
	}
}

func TestCollectMessagesFailsOnABadRow(t *testing.T) {
	t.Parallel()
	// Without the extra column the dialect asks for one destination
	// fewer than these rows have.
	_, err := testDialect.CollectMessages(&fakeRows{n: 2, extra: true}, 0)
	require.ErrorContains(t, err, "destinations")
}

// A claim reads up to a thousand rows: they share one scanner, so a row
// costs no allocation of the scan's own (the slice's growth is all).
func TestCollectMessagesSharesTheScanAcrossRows(t *testing.T) {
	const rows = 1000
	allocs := testing.AllocsPerRun(20, func() {
		ms, err := testDialect.CollectMessages(&fakeRows{n: rows}, 0)
		if err != nil || len(ms) != rows {
			t.Fatalf("collect: %d rows, %v", len(ms), err)
		}
	})
	require.Less(t, allocs/rows, 0.05, "%.0f allocations for %d rows", allocs, rows)
}

// codecColumns are the names of codec.Columns, in order.
var codecColumns = strings.Split(strings.ReplaceAll(codec.Columns, " ", ""), ",")

// With the count known (a claim of chosen ids, a load of given keys) the
// slice is made once: a handful of allocations for the whole query.
func TestCollectMessagesOfAKnownCountAllocatesOnce(t *testing.T) {
	const rows = 1000
	allocs := testing.AllocsPerRun(20, func() {
		ms, err := testDialect.CollectMessages(&fakeRows{n: rows}, rows)
		if err != nil || len(ms) != rows {
			t.Fatalf("collect: %d rows, %v", len(ms), err)
		}
	})
	require.LessOrEqual(t, allocs, 4.0)
}
