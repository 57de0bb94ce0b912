package forwarder

import (
	"unsafe"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// BuildRecord builds the record forwarded for a committed message: the
// forward topic, key and tag, the payload as value, and the producer's
// headers followed by ec-id (a producer header named ec-id is replaced, so
// consumers can trust it).
func BuildRecord(m *state.Message) Record {
	id := envelope.MessageID(make([]byte, 0, len(m.BizID)+1+len(m.Key)), m.BizID, m.Key)
	hs := envelope.ForwardHeaders(m.Headers, id)
	return Record{
		// The id bytes are never written again, so the string can share them.
		ID:      unsafe.String(unsafe.SliceData(id), len(id)),
		Topic:   m.Topic,
		Key:     m.ForwardKey,
		Tag:     m.Tag,
		Value:   m.Payload,
		Headers: hs,
	}
}
