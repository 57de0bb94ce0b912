// Package kafkarec converts between the envelope package's records and
// headers and franz-go's, in one place: the producer library, ingest, the
// Kafka forward target, the DLQ tools and the test tools all copy headers
// through it. It is apart from envelope so that envelope imports no Kafka
// client.
package kafkarec

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// Headers copies franz-go record headers to envelope headers; nil when
// there are none. Names and values are shared, not copied.
func Headers(hs []kgo.RecordHeader) []envelope.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]envelope.Header, len(hs))
	for i, h := range hs {
		out[i] = envelope.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// KgoHeaders copies envelope headers to franz-go record headers; nil when
// there are none. Names and values are shared, not copied.
func KgoHeaders(hs []envelope.Header) []kgo.RecordHeader {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		out[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return out
}

// Record builds the franz-go record of an envelope record for topic.
func Record(topic string, r envelope.Record) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: KgoHeaders(r.Headers)}
}

// Size is a record's key, value and headers (names and values) in bytes.
func Size(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
