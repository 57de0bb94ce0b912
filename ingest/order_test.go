package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

// A PREPARE's order key is its ec-order-key, or its forward key for a
// bizID ordered by forward key; an ordered message without a forward key
// is keyed by its order key.
func TestChangeCarriesTheOrderKey(t *testing.T) {
	t.Parallel()
	in := &Ingester{cfg: Config{OrderByForwardKey: func(biz string) bool { return biz == "byfk" }}}
	now := time.Now()
	for _, c := range []struct {
		biz, order, fkey string
		wantOrder, wantF string
	}{
		{"shop", "o-1", "k", "o-1", "k"},
		{"shop", "", "k", "", "k"},
		{"shop", "o-1", "", "o-1", "o-1"},
		{"byfk", "", "k", "k", "k"},
		{"byfk", "o-2", "k", "o-2", "k"},
		{"byfk", "", "", "", ""},
	} {
		e := envelope.Envelope{Type: envelope.Prepare, BizID: c.biz, MessageKey: "m", ForwardTopic: "t", ForwardKey: c.fkey, OrderKey: c.order}
		ch := in.change(&e, 0, now)
		require.Equal(t, c.wantOrder, ch.Event.Body.OrderKey, "%+v", c)
		require.Equal(t, c.wantF, ch.Event.Body.ForwardKey, "%+v", c)
	}
}
