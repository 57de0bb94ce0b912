package codec

import "github.com/eventcenter/eventcenter/state"

// PayloadArg is a message's payload as a statement argument: NULL when the
// message has none.
func PayloadArg(m *state.Message) any {
	if m.Payload == nil {
		return nil
	}
	return m.Payload
}

// HeadersArg is a message's forwarded headers, encoded, as a statement
// argument: NULL when there are none.
func HeadersArg(m *state.Message) any {
	if h := EncodeHeaders(m.Headers); h != nil {
		return h
	}
	return nil
}
