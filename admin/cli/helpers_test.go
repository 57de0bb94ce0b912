package cli

import "github.com/eventcenter/eventcenter/envelope"

func envelopeHeaders(kv ...string) []envelope.Header {
	var hs []envelope.Header
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, envelope.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return hs
}
