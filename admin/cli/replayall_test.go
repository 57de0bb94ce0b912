package cli

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
)

// pagedDLQ holds n records on partition 0, listed in pages; offset 3 is
// refused (it would be dead-lettered again), offset fail fails.
type pagedDLQ struct {
	n, fail  int64
	mu       sync.Mutex
	replayed []int64
}

func (d *pagedDLQ) List(_ context.Context, q admin.DLQQuery) ([]admin.DLQRecord, string, error) {
	from := int64(0)
	if q.After != "" {
		v, err := strconv.ParseInt(q.After, 10, 64)
		if err != nil {
			return nil, "", admin.ErrBadDLQCursor
		}
		from = v
	}
	var out []admin.DLQRecord
	for o := from; o < d.n && len(out) < q.Limit; o++ {
		out = append(out, admin.DLQRecord{Partition: 0, Offset: o, Value: []byte("v")})
	}
	next := ""
	if end := from + int64(len(out)); end < d.n {
		next = strconv.FormatInt(end, 10)
	}
	return out, next, nil
}

func (d *pagedDLQ) Get(context.Context, int32, int64) (admin.DLQRecord, error) {
	return admin.DLQRecord{}, admin.ErrDLQNotFound
}

func (d *pagedDLQ) Replay(_ context.Context, p int32, o int64, _ admin.ReplayFix) (admin.DLQRecord, error) {
	switch {
	case o == 3:
		return admin.DLQRecord{}, fmt.Errorf("%w: decode: missing ec-key", admin.ErrReplayInvalid)
	case o == d.fail:
		return admin.DLQRecord{}, fmt.Errorf("kafka down")
	}
	d.mu.Lock()
	d.replayed = append(d.replayed, o)
	d.mu.Unlock()
	return admin.DLQRecord{Partition: p, Offset: o}, nil
}

// dlq replay --all pages through the whole topic, replays every record,
// skips and lists the refused one, and reports progress on stderr (one
// line: not a terminal).
func TestDLQReplayAll(t *testing.T) {
	t.Parallel()
	dlq := &pagedDLQ{n: replayAllPage + 20, fail: -1}
	env := admintest.New(t, dlq, func(c *admin.Config) { c.MaxLimit = replayAllPage })
	_, _, err := run(t, env, admintest.AdminToken, "dlq", "replay", "--all")
	require.ErrorContains(t, err, "--reason is required")
	_, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "--all", "0", "1", "--reason", "r")
	require.ErrorContains(t, err, "unknown command") // cobra.NoArgs
	out, errOut, err := run(t, env, admintest.AdminToken, "dlq", "replay", "--all", "--reason", "producer fixed")
	require.NoError(t, err)
	require.Equal(t, "replayed 519 of 520 dead-letter records to the control topic; 1 refused:\n"+
		"  0/3: replay dead-letter record 0/3: dead-letter record would be dead-lettered again: decode: missing ec-key\n", out)
	require.Regexp(t, `^dlq replay: replay: 520/520 records in [0-9.]+m?s \([0-9.]+ records/s\)\n$`, errOut)
	require.Len(t, dlq.replayed, 519)
}

// Any other error stops it, saying how far it got.
func TestDLQReplayAllStopsOnAnError(t *testing.T) {
	t.Parallel()
	dlq := &pagedDLQ{n: 10, fail: 6}
	env := admintest.New(t, dlq)
	_, _, err := run(t, env, admintest.AdminToken, "dlq", "replay", "--all", "--reason", "producer fixed")
	require.ErrorContains(t, err, "replay dead letter 0/6 (5 of 10 replayed before it)")
	require.Len(t, dlq.replayed, 5)
}
