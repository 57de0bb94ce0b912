package ingest

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// A duplicate PREPARE with a different body is ignored (the first body
// stands), logged (at most one line per bizID per 10 s) and counted per
// bizID, not only a "duplicate" in a metric: the producer reused a key.
func TestDuplicatePrepareWithADifferentBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	var logs logbuf.Buffer
	cfg := e.config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	in := e.start(cfg, st, fwd, NewOwnership())
	e.produce(
		prepareRec("shop", "d", []byte("first")),
		prepareRec("shop", "d", []byte("first")), // the same: a plain duplicate
		prepareRec("shop", "d", []byte("second")),
		prepareRec("shop", "d", []byte("third")),
		prepareRec("shop", "d", []byte("fourth")),
		prepareRec("pay", "e", []byte("one")),
		prepareRec("pay", "e", []byte("two")),
	)
	require.Eventually(t, e.committedAll, waitFor, tick)
	m, ok := st.get("shop", "d")
	require.True(t, ok)
	require.Equal(t, []byte("first"), m.Payload, "the first body stands")
	require.Equal(t, map[string]int64{"shop": 3, "pay": 1}, in.DifferingPrepares())
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "biz_id=shop key=d"), "one line per bizID per 10s:\n%s", out)
	require.Equal(t, 1, strings.Count(out, "biz_id=pay key=e"), out)
	require.Contains(t, out, "duplicate PREPARE with a different body ignored")
}

func TestDifferingRateLimitAndCap(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var d differing
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		d.note(log, t0.Add(time.Duration(i)*time.Second), "b", "k", 0, int64(i))
	}
	require.Equal(t, 1, strings.Count(logs.String(), "biz_id=b"))
	d.note(log, t0.Add(11*time.Second), "b", "k", 0, 5)
	require.Equal(t, 2, strings.Count(logs.String(), "biz_id=b"))
	require.Contains(t, logs.String(), "count_for_biz_id=6 not_logged_since_last_line=4")

	// bizIDs past the cap are counted together.
	for i := range maxDifferingBizIDs + 5 {
		d.note(log, t0, fmt.Sprintf("biz-%d", i), "k", 0, 0)
	}
	got := d.snapshot()
	require.Len(t, got, maxDifferingBizIDs+1)
	require.Equal(t, int64(6), got[DifferingOther])
}

func TestBodyDiffersOutcome(t *testing.T) {
	t.Parallel()
	body := &state.Body{Payload: []byte("p"), Topic: "t", ForwardKey: "fk"}
	at := time.Now()
	m, _, err := state.Apply(state.Message{BizID: "b", Key: "k"}, state.Event{Kind: state.KindPrepare, At: at, Body: body})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		b    state.Body
		want bool
	}{
		"same":          {*body, false},
		"payload":       {state.Body{Payload: []byte("q"), Topic: "t", ForwardKey: "fk"}, true},
		"topic":         {state.Body{Payload: []byte("p"), Topic: "u", ForwardKey: "fk"}, true},
		"forward key":   {state.Body{Payload: []byte("p"), Topic: "t", ForwardKey: "fx"}, true},
		"other headers": {state.Body{Payload: []byte("p"), Topic: "t", ForwardKey: "fk", Headers: nil}, false},
	} {
		b := c.b
		_, out, err := state.Apply(m, state.Event{Kind: state.KindPrepare, At: at, Body: &b})
		require.NoError(t, err)
		require.Equal(t, state.NoOp, out.Effect, name)
		require.Equal(t, c.want, out.BodyDiffers, name)
	}
}
