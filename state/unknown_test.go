package state

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A status or send status written by a newer version is left alone: no
// envelope, result or scan changes it (not even the conflict count), and
// operator actions are refused, whatever the event.
func TestUnknownStatesAreLeftAlone(t *testing.T) {
	t.Parallel()
	future := prepared()
	future.Status = Status(9) // e.g. a terminal state a newer center adds
	futureSend := committed(SendPending)
	futureSend.SendStatus = SendStatus(3) // e.g. scheduled for later
	require.False(t, future.Status.Known())
	require.False(t, futureSend.SendStatus.Known())
	for _, cur := range []Message{future, futureSend} {
		for k := KindPrepare; k <= KindSendDeferred; k++ {
			got, out, err := Apply(cur, ev(k))
			require.Equal(t, cur, got, "%s on %s/%s", k, cur.Status, cur.SendStatus)
			require.Equal(t, Outcome{}, out, "%s", k)
			if k.IsOperator() {
				require.ErrorIs(t, err, ErrWrongState, "%s", k)
				require.ErrorContains(t, err, "does not know")
			} else {
				require.NoError(t, err, "%s", k)
			}
		}
	}
	for _, s := range []Status{Prepared, Committed, RolledBack, VerifyFailed} {
		require.True(t, s.Known(), s)
	}
	require.False(t, None.Known())
	for _, s := range []SendStatus{SendPending, SendSent, SendDead} {
		require.True(t, s.Known(), s)
	}
}
