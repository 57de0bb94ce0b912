package forwarder

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
)

func TestInterleaveBizIDsPutsEachBizIDAtTheFrontInItsOwnOrder(t *testing.T) {
	t.Parallel()
	var msgs []state.Message
	for i := range 5 {
		msgs = append(msgs, state.Message{ID: int64(10 + i), BizID: "flood"})
	}
	msgs = append(msgs, state.Message{ID: 1, BizID: "quiet"}, state.Message{ID: 20, BizID: "other"}, state.Message{ID: 2, BizID: "quiet"})
	var got []int64
	for _, m := range interleaveBizIDs(msgs) {
		got = append(got, m.ID)
	}
	require.Equal(t, []int64{10, 1, 20, 11, 2, 12, 13, 14}, got)
}
