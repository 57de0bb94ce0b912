package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// A batch tells the verifier when its PREPAREs fall due, except those its
// own COMMIT or ROLLBACK decided.
func TestTellCheckDueSkipsWhatTheBatchDecided(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prepare := func(key string, after time.Duration) store.Change {
		return store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: now, Body: &state.Body{CheckAfter: after}}}
	}
	decide := func(key string, k state.Kind) store.Change {
		return store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: k, At: now}}
	}
	var told []time.Time
	in := &Ingester{cfg: Config{CheckDue: func(at time.Time) { told = append(told, at) }}}

	in.tellCheckDue([]store.Change{
		prepare("committed", time.Second), decide("committed", state.KindCommit),
		prepare("rolled-back", 2*time.Second), decide("rolled-back", state.KindRollback),
		prepare("open", 3*time.Second), prepare("open-later", 4*time.Second),
	})
	require.Equal(t, []time.Time{now.Add(3 * time.Second), now.Add(4 * time.Second)}, told)

	told = nil
	in.tellCheckDue([]store.Change{prepare("a", time.Second), decide("a", state.KindCommit)})
	require.Empty(t, told, "nothing left to check back")
}
