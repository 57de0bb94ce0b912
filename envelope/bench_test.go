package envelope_test

import (
	"testing"

	"github.com/eventcenter/eventcenter/envelope"
)

func BenchmarkDecodeNative(b *testing.B) {
	r, err := envelope.Encode(prepare())
	if err != nil {
		b.Fatal(err)
	}
	var dec envelope.Decoder
	b.ReportAllocs()
	b.SetBytes(int64(len(r.Value)))
	for b.Loop() {
		if _, err := dec.Decode(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeNativeCommit(b *testing.B) {
	r, err := envelope.Encode(envelope.Envelope{Type: envelope.Commit, BizID: "order", MessageKey: "42:a"})
	if err != nil {
		b.Fatal(err)
	}
	var dec envelope.Decoder
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dec.Decode(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeCompat(b *testing.B) {
	r := envelope.Record{Value: []byte(`{"message":"{\"id\":42}","bizID":1001,"messageKey":"order-42","messageStatus":1,` +
		`"forwardTopic":"orders.created","forwardKey":"42","verifyInfo":{"protocolType":1,"url":"http://order-svc:8080/check"}}`)}
	var dec envelope.Decoder
	b.ReportAllocs()
	b.SetBytes(int64(len(r.Value)))
	for b.Loop() {
		if _, err := dec.Decode(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	e := prepare()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envelope.Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}
