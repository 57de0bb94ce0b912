package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// TestRetryNowEligibleIsTheStateMachine: the rule the drivers select with is
// exactly the set of rows state.Apply accepts a retry-now for.
func TestRetryNowEligibleIsTheStateMachine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, st := range []state.Status{state.Prepared, state.Committed, state.RolledBack, state.VerifyFailed} {
		for _, body := range []bool{false, true} {
			for _, send := range []state.SendStatus{state.SendPending, state.SendSent, state.SendDead} {
				m := state.Message{BizID: "b", Key: "k", Status: st, HasBody: body, SendStatus: send}
				_, _, err := state.Apply(m, state.Event{Kind: state.KindRetryNow, At: at})
				require.Equal(t, err == nil, store.RetryNowEligible(&m), "%s body=%v send=%s", st, body, send)
			}
		}
	}
}

// TestRetryNowWhere pins the SQL the drivers run for each dialect.
func TestRetryNowWhere(t *testing.T) {
	t.Parallel()
	require.Equal(t, "(status IN (1, 4) OR (status = 2 AND has_body AND send_status IN (0, 2)))",
		store.RetryNowWhere("has_body"))
	require.Equal(t, "(status IN (1, 4) OR (status = 2 AND has_body = 1 AND send_status IN (0, 2)))",
		store.RetryNowWhere("has_body = 1"))
}
