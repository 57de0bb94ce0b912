package storetest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// testListWithoutBodies: List returns summaries (no payload, no headers,
// the payload's size); Get still returns the whole message.
func testListWithoutBodies(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	payload := bytes.Repeat([]byte{0xab, 0}, 1000)
	c := Prepare(biz, "big", 0, b.now())
	c.Event.Body = &state.Body{Payload: payload, Headers: []envelope.Header{{Key: "h", Value: []byte("v")}}, Topic: "t"}
	b.apply(t, c, Commit(biz, "orphan", 0, b.now()))
	c = Prepare(biz, "empty", 0, b.now())
	c.Event.Body = &state.Body{Payload: []byte{}, Topic: "t"}
	b.apply(t, c)

	p, err := b.s.List(t.Context(), store.Filter{})
	require.NoError(t, err)
	require.Len(t, p.Messages, 3)
	sizes := map[string]int{}
	byKey := map[string]store.Summary{}
	for _, m := range p.Messages {
		require.Nil(t, m.Payload, m.Key)
		require.Nil(t, m.Headers, m.Key)
		sizes[m.Key] = m.PayloadSize
		byKey[m.Key] = m
	}
	require.Equal(t, map[string]int{"big": len(payload), "orphan": 0, "empty": 0}, sizes)
	require.True(t, byKey["big"].HasBody, "the rest of the row is there")
	require.Equal(t, "t", byKey["big"].Topic)
	require.False(t, byKey["orphan"].HasBody)

	m := b.get(t, biz, "big")
	require.Equal(t, payload, m.Payload)
	require.Equal(t, []envelope.Header{{Key: "h", Value: []byte("v")}}, m.Headers)
}
