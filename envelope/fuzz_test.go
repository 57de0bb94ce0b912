package envelope_test

import (
	"bytes"
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/eventcenter/eventcenter/envelope"
)

// fuzzHeaders packs headers as "name=value" lines.
func fuzzHeaders(kv ...string) []byte {
	var b bytes.Buffer
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + "=" + kv[i+1] + "\n")
	}
	return b.Bytes()
}

func parseFuzzHeaders(b []byte) []envelope.Header {
	var hs []envelope.Header
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		k, v, _ := bytes.Cut(line, []byte("="))
		hs = append(hs, envelope.Header{Key: string(k), Value: v})
	}
	return hs
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("order:42:a"), []byte(`{"id":42}`), fuzzHeaders(
		"ec-type", "prepare", "ec-biz", "order", "ec-key", "42:a", "ec-topic", "orders", "ec-fkey", "42",
		"ec-target", "kafka", "ec-tag", "t", "ec-verify", "tri://h:1/a.B/verifyMessage?version=1",
		"ec-check-after", "1500", "ec-h-traceparent", "00-1", "ec-h-x", "", "other", "ignored"))
	f.Add([]byte("b:k"), []byte(nil), fuzzHeaders("ec-type", "commit", "ec-biz", "b", "ec-key", "k"))
	f.Add([]byte("b:k"), []byte(nil), fuzzHeaders("ec-type", "rollback", "ec-biz", "b", "ec-key", "k"))
	f.Add([]byte("b:k"), []byte("x"), fuzzHeaders("ec-type", "commit", "ec-biz", "b", "ec-key", "k"))
	f.Add([]byte("b:k"), []byte(""), fuzzHeaders("ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", "t",
		"ec-check-after", "00", "ec-verify", "http://h/x?a=b"))
	f.Add([]byte(nil), []byte(`{"message":"m","bizID":1001,"messageKey":"k","messageStatus":1,"forwardTopic":"t","forwardKey":"f",`+
		`"verifyInfo":{"protocolType":1,"url":"http://svc:8080/verify"}}`), []byte(nil))
	f.Add([]byte(nil), []byte(`{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t",`+
		`"verifyInfo":{"protocolType":2,"interface":"a.B","method":"m","version":"1","group":"g","address":"h:1"}}`), []byte(nil))
	f.Add([]byte(nil), []byte(`{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t",`+
		`"verifyInfo":{"protocolType":2,"url":"dubbo://h:2/a.B?version=2"}}`), []byte(nil))
	f.Add([]byte(nil), []byte(`{"bizID":-1,"messageKey":"k","messageStatus":3}`), []byte(nil))
	f.Add([]byte(nil), []byte(`{"bizID":1,"messageKey":"k","messageStatus":2,"verifyInfo":{"protocolType":2,"registryAddress":"zk:1"}}`), []byte(nil))

	dec := envelope.Decoder{MaxPayload: 1 << 16}
	f.Fuzz(func(t *testing.T, key, value, headers []byte) {
		r := envelope.Record{Topic: "control", Key: key, Value: value, Headers: parseFuzzHeaders(headers)}
		e, err := dec.Decode(r)
		if err != nil {
			var de *envelope.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, envelope.ErrInvalid) || de.Field == "" {
				t.Fatalf("error is not a DecodeError matching ErrInvalid: %v", err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("decoded envelope does not validate: %v\n%#v", err, e)
		}
		if e.Verify != "" {
			if _, err := url.Parse(e.Verify); err != nil {
				t.Fatalf("accepted verify endpoint does not parse: %v", err)
			}
		}
		r2, err := envelope.Encode(e)
		if err != nil {
			t.Fatalf("decoded envelope does not encode: %v\n%#v", err, e)
		}
		e2, err := dec.Decode(r2)
		if err != nil {
			t.Fatalf("re-encoded envelope does not decode: %v\n%#v", err, e)
		}
		e.Format = envelope.Native
		if !equal(e, e2) {
			t.Fatalf("round trip changed the envelope:\n%#v\n%#v", e, e2)
		}
	})
}

func equal(a, b envelope.Envelope) bool {
	if !bytes.Equal(a.Payload, b.Payload) || len(a.Headers) != len(b.Headers) {
		return false
	}
	if (a.Payload == nil) != (b.Payload == nil) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) ||
			(a.Headers[i].Value == nil) != (b.Headers[i].Value == nil) {
			return false
		}
	}
	a.Payload, b.Payload, a.Headers, b.Headers = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// FuzzVerifyEndpoint checks that every check-back endpoint the envelope
// accepts parses with net/url (the verifier's parser) with the same scheme
// and host.
func FuzzVerifyEndpoint(f *testing.F) {
	for _, s := range []string{
		"http://h", "https://h:443/a?b=c", "http://[::1]:8080/x", "tri://h:1/a.B/m?version=1",
		"jsonrpc://h/p?method=m", "http://h/%41", "http://h:x/", "http://u@h/", "tri://h/a",
		"HTTP://h/x", "Tri://h:1/a.B/m", "JSONRPC://h/p", "TRIS://h/a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := envelope.Envelope{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: "t", Verify: s}
		r, err := envelope.Encode(e)
		if err != nil || s == "" {
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("accepted %q, url.Parse fails: %v", s, err)
		}
		switch u.Scheme { // url.Parse lowers the scheme, as the verifier does
		case "http", "https", "tri", "tris", "jsonrpc", "jsonrpcs":
		default:
			t.Fatalf("accepted %q, url.Parse sees scheme %q", s, u.Scheme)
		}
		if u.Host == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted %q, url.Parse sees host %q user %v fragment %q", s, u.Host, u.User, u.Fragment)
		}
		got, err := envelope.Decoder{}.Decode(r)
		if err != nil || got.Verify != s {
			t.Fatalf("round trip of %q: %v %q", s, err, got.Verify)
		}
	})
}
