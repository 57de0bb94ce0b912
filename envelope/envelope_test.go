package envelope_test

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

// prepare returns a full valid prepare envelope.
func prepare() envelope.Envelope {
	return envelope.Envelope{
		Type:         envelope.Prepare,
		BizID:        "order",
		MessageKey:   "42:a",
		Payload:      []byte(`{"id":42}`),
		ForwardTopic: "orders.created",
		ForwardKey:   "42",
		Target:       "kafka-main",
		Tag:          "created",
		Verify:       "http://order-svc:8080/check",
		CheckAfter:   1500 * time.Millisecond,
		Headers: []envelope.Header{
			{Key: "traceparent", Value: []byte("00-abc-01")},
			{Key: "x-empty"},
			{Key: "traceparent", Value: []byte("dup")},
		},
	}
}

// native builds a native record from header pairs.
func native(key, value string, kv ...string) envelope.Record {
	r := envelope.Record{Topic: "control", Partition: 3, Offset: 42, Key: []byte(key)}
	if value != "" {
		r.Value = []byte(value)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Headers = append(r.Headers, envelope.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, e := range []envelope.Envelope{
		prepare(),
		{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: "t"},
		{Type: envelope.Commit, BizID: "order", MessageKey: "42:a"},
		{Type: envelope.Rollback, BizID: "订单", MessageKey: "ключ"},
		{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: "t", Verify: "tri://h:50051/com.x.Verify/verifyMessage?version=1.0.0"},
		{Type: envelope.Prepare, BizID: "b", MessageKey: "at", ForwardTopic: "t", DeliverAt: time.UnixMilli(1_900_000_000_123).UTC()},
		{Type: envelope.Prepare, BizID: "b", MessageKey: "delay", ForwardTopic: "t", Delay: 30 * time.Minute},
		{Type: envelope.Cancel, BizID: "b", MessageKey: "k"},
	} {
		t.Run(e.Type.String()+"/"+e.MessageKey, func(t *testing.T) {
			t.Parallel()
			r, err := envelope.Encode(e)
			require.NoError(t, err)
			require.Equal(t, envelope.Key(e.BizID, e.MessageKey), string(r.Key))
			got, err := envelope.Decoder{}.Decode(r)
			require.NoError(t, err)
			require.Equal(t, e, got)
			require.NoError(t, got.Validate())
		})
	}
}

func TestVerifyEndpointsAccepted(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"http://h", "https://h:443", "http://order-svc.prod.svc.cluster.local:8080/eventcenter/check?x=1&y=%2F",
		"http://[::1]:8080/check", "http://[fe80::1]/", "http://10.0.0.5?a=b",
		"tri://h:50051/com.shop.Verify/verifyMessage?version=1.0.0&group=g&bizid=int", "tris://h/a.B/m",
		"jsonrpc://h:8080/com.shop.Verify?method=verifyMessage", "jsonrpcs://h/p",
		// Schemes are case-insensitive, as in the verifier.
		"HTTP://h/check", "Https://h", "Tri://h:1/a.B/m", "TRIS://h/a.B/m", "JSONRPC://h/p", "JsonRpcS://h/p",
	} {
		e := prepare()
		e.Verify = v
		r, err := envelope.Encode(e)
		require.NoError(t, err, v)
		got, err := envelope.Decoder{}.Decode(r)
		require.NoError(t, err, v)
		require.Equal(t, v, got.Verify)
		_, err = url.Parse(v)
		require.NoError(t, err, v)
	}
}

func TestDecodeNativeIgnoresForeignHeaders(t *testing.T) {
	t.Parallel()
	r := native("b:k", "", "traceparent", "x", "ec-type", "commit", "ec-unknown", "y", "ec-biz", "b", "ec-key", "k",
		"ec-topic", "ignored-on-commit")
	e, err := envelope.Decoder{}.Decode(r)
	require.NoError(t, err)
	require.Equal(t, envelope.Envelope{Type: envelope.Commit, BizID: "b", MessageKey: "k"}, e)
	require.Equal(t, "b:k", e.ID())
}

func TestDecodeValidationErrors(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	base := []string{"ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", "t"}
	with := func(kv ...string) []string { return append(append([]string{}, base...), kv...) }
	cases := []struct {
		name   string
		rec    envelope.Record
		dec    envelope.Decoder
		field  string
		reason string
		err    error
	}{
		{"unknown type", native("b:k", "", "ec-type", "PREPARE", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "ec-type", "unknown type", envelope.ErrUnknownType},
		{"empty type", native("b:k", "", "ec-type", "", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "ec-type", "unknown type", envelope.ErrUnknownType},
		{"repeated type", native("b:k", "", "ec-type", "commit", "ec-type", "commit", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "ec-type", "repeated", envelope.ErrInvalid},
		{"repeated topic", native("b:k", "", with("ec-topic", "u")...), envelope.Decoder{}, "ec-topic", "repeated", envelope.ErrInvalid},
		{"missing biz", native("b:k", "", "ec-type", "commit", "ec-key", "k"), envelope.Decoder{}, "ec-biz", "required", envelope.ErrInvalid},
		{"missing key", native("b:k", "", "ec-type", "commit", "ec-biz", "b"), envelope.Decoder{}, "ec-key", "required", envelope.ErrInvalid},
		{"key mismatch", native("b:x", "", "ec-type", "commit", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "key", "is not ec-biz:ec-key", envelope.ErrInvalid},
		{"key without colon", native("bxk", "", "ec-type", "commit", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "key", "is not ec-biz:ec-key", envelope.ErrInvalid},
		{"nil key", native("", "", "ec-type", "commit", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "key", "is not ec-biz:ec-key", envelope.ErrInvalid},
		{"biz with colon", native("a:b:k", "", "ec-type", "commit", "ec-biz", "a:b", "ec-key", "k"), envelope.Decoder{}, "ec-biz", "contains ':'", envelope.ErrInvalid},
		{"biz with space", native("a b:k", "", "ec-type", "commit", "ec-biz", "a b", "ec-key", "k"), envelope.Decoder{}, "ec-biz", "space or control", envelope.ErrInvalid},
		{"biz too long", native(long(65)+":k", "", "ec-type", "commit", "ec-biz", long(65), "ec-key", "k"), envelope.Decoder{}, "ec-biz", "at most 64", envelope.ErrInvalid},
		{"biz not utf8", native("\xff:k", "", "ec-type", "commit", "ec-biz", "\xff", "ec-key", "k"), envelope.Decoder{}, "ec-biz", "UTF-8", envelope.ErrInvalid},
		{"key too long", native("b:"+long(256), "", "ec-type", "commit", "ec-biz", "b", "ec-key", long(256)), envelope.Decoder{}, "ec-key", "at most 255", envelope.ErrInvalid},
		{"key with NUL", native("b:k\x00", "", "ec-type", "commit", "ec-biz", "b", "ec-key", "k\x00"), envelope.Decoder{}, "ec-key", "control character", envelope.ErrInvalid},
		{"key not utf8", native("b:\xc3", "", "ec-type", "commit", "ec-biz", "b", "ec-key", "\xc3"), envelope.Decoder{}, "ec-key", "UTF-8", envelope.ErrInvalid},
		{"payload too large", native("b:k", "12345", base...), envelope.Decoder{MaxPayload: 4}, "value", "exceeds the limit of 4", envelope.ErrTooLarge},
		{"missing topic", native("b:k", "", "ec-type", "prepare", "ec-biz", "b", "ec-key", "k"), envelope.Decoder{}, "ec-topic", "required on prepare", envelope.ErrInvalid},
		{"bad topic", native("b:k", "", "ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", "a/b"), envelope.Decoder{}, "ec-topic", "only letters", envelope.ErrInvalid},
		{"dot topic", native("b:k", "", "ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", ".."), envelope.Decoder{}, "ec-topic", "not a topic name", envelope.ErrInvalid},
		{"topic too long", native("b:k", "", "ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", long(250)), envelope.Decoder{}, "ec-topic", "at most 249", envelope.ErrInvalid},
		{"fkey too long", native("b:k", "", with("ec-fkey", long(1025))...), envelope.Decoder{}, "ec-fkey", "at most 1024", envelope.ErrInvalid},
		{"fkey control", native("b:k", "", with("ec-fkey", "a\nb")...), envelope.Decoder{}, "ec-fkey", "control character", envelope.ErrInvalid},
		{"bad target", native("b:k", "", with("ec-target", "a b")...), envelope.Decoder{}, "ec-target", "only letters", envelope.ErrInvalid},
		{"target too long", native("b:k", "", with("ec-target", long(65))...), envelope.Decoder{}, "ec-target", "at most 64", envelope.ErrInvalid},
		{"tag too long", native("b:k", "", with("ec-tag", long(256))...), envelope.Decoder{}, "ec-tag", "at most 255", envelope.ErrInvalid},
		{"verify scheme", native("b:k", "", with("ec-verify", "ftp://h/x")...), envelope.Decoder{}, "ec-verify", "scheme must be", envelope.ErrInvalid},
		{"verify relative", native("b:k", "", with("ec-verify", "/check")...), envelope.Decoder{}, "ec-verify", "scheme must be", envelope.ErrInvalid},
		{"verify no host", native("b:k", "", with("ec-verify", "http:///check")...), envelope.Decoder{}, "ec-verify", "no host", envelope.ErrInvalid},
		{"verify user", native("b:k", "", with("ec-verify", "http://u:p@h/check")...), envelope.Decoder{}, "ec-verify", "credentials", envelope.ErrInvalid},
		{"verify fragment", native("b:k", "", with("ec-verify", "http://h/check#x")...), envelope.Decoder{}, "ec-verify", "fragment", envelope.ErrInvalid},
		{"verify unparsable", native("b:k", "", with("ec-verify", "http://h:x:y/")...), envelope.Decoder{}, "ec-verify", "not a URL", envelope.ErrInvalid},
		{"verify tri no method", native("b:k", "", with("ec-verify", "tri://h:1/com.x.Verify")...), envelope.Decoder{}, "ec-verify", "<interface>/<method>", envelope.ErrInvalid},
		{"verify bad escape", native("b:k", "", with("ec-verify", "http://h/a%zz")...), envelope.Decoder{}, "ec-verify", "bad %-escape", envelope.ErrInvalid},
		{"verify short escape", native("b:k", "", with("ec-verify", "http://h/a%4")...), envelope.Decoder{}, "ec-verify", "bad %-escape", envelope.ErrInvalid},
		{"verify space", native("b:k", "", with("ec-verify", "http://h/a b")...), envelope.Decoder{}, "ec-verify", "unescaped byte", envelope.ErrInvalid},
		{"verify port letters", native("b:k", "", with("ec-verify", "http://h:8o/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify empty port", native("b:k", "", with("ec-verify", "http://h:/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify long port", native("b:k", "", with("ec-verify", "http://h:123456/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify encoded slash", native("b:k", "", with("ec-verify", "http://h/cb%2f..%2fadmin")...), envelope.Decoder{}, "ec-verify", "encoded slash", envelope.ErrInvalid},
		{"verify encoded dots", native("b:k", "", with("ec-verify", "http://h/cb/%2e%2e/admin")...), envelope.Decoder{}, "ec-verify", "dot segments", envelope.ErrInvalid},
		{"verify bad host", native("b:k", "", with("ec-verify", "http://h!x/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify bad ipv6", native("b:k", "", with("ec-verify", "http://[::1/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify ipv6 junk", native("b:k", "", with("ec-verify", "http://[::1]x/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify ipv6 empty port", native("b:k", "", with("ec-verify", "http://[::1]:/")...), envelope.Decoder{}, "ec-verify", "bad host or port", envelope.ErrInvalid},
		{"verify upper scheme, tri no method", native("b:k", "", with("ec-verify", "TRI://h:1/com.x.Verify")...), envelope.Decoder{}, "ec-verify", "<interface>/<method>", envelope.ErrInvalid},
		// One grammar with the verifier (checkback.CheckEndpoint): these were
		// accepted on ingest and then could never be called.
		{"verify jsonrpc no path", native("b:k", "", with("ec-verify", "jsonrpcs://h/")...), envelope.Decoder{}, "ec-verify", "<service path>", envelope.ErrInvalid},
		{"verify dot segment", native("b:k", "", with("ec-verify", "http://h/a/../admin")...), envelope.Decoder{}, "ec-verify", "dot segments", envelope.ErrInvalid},
		{"verify escaped dot segment", native("b:k", "", with("ec-verify", "http://h/a/%2E%2e/admin")...), envelope.Decoder{}, "ec-verify", "dot segments", envelope.ErrInvalid},
		{"verify bad bizid", native("b:k", "", with("ec-verify", "tri://h:1/a.B/m?bizid=long")...), envelope.Decoder{}, "ec-verify", `bizid="long"`, envelope.ErrInvalid},
		{"verify registry scheme", native("b:k", "", with("ec-verify", "dubbo://zk:2181/a.B")...), envelope.Decoder{}, "ec-verify", "registry addresses are not supported", envelope.ErrInvalid},
		{"verify too long", native("b:k", "", with("ec-verify", "http://h/"+long(2048))...), envelope.Decoder{}, "ec-verify", "at most 2048", envelope.ErrInvalid},
		{"check-after negative", native("b:k", "", with("ec-check-after", "-1")...), envelope.Decoder{}, "ec-check-after", "non-negative integer", envelope.ErrInvalid},
		{"check-after text", native("b:k", "", with("ec-check-after", "1s")...), envelope.Decoder{}, "ec-check-after", "non-negative integer", envelope.ErrInvalid},
		{"check-after huge", native("b:k", "", with("ec-check-after", "9999999999999")...), envelope.Decoder{}, "ec-check-after", "non-negative integer", envelope.ErrInvalid},
		{"check-after over max", native("b:k", "", with("ec-check-after", "604800001")...), envelope.Decoder{}, "ec-check-after", "outside", envelope.ErrInvalid},
		{"empty header name", native("b:k", "", with("ec-h-", "v")...), envelope.Decoder{}, "ec-h-*", "empty header name", envelope.ErrInvalid},
		{"reserved header name", native("b:k", "", with("ec-h-ec-id", "v")...), envelope.Decoder{}, "ec-h-ec-id", "reserved", envelope.ErrInvalid},
		{"header name control", native("b:k", "", with("ec-h-a\x01", "v")...), envelope.Decoder{}, "ec-h-*", "header name", envelope.ErrInvalid},
		{"header name too long", native("b:k", "", with("ec-h-"+long(256), "v")...), envelope.Decoder{}, "ec-h-*", "at most 255", envelope.ErrInvalid},
		{"header value too long", native("b:k", "", with("ec-h-x", long(16<<10+1))...), envelope.Decoder{}, "ec-h-x", "at most 16384", envelope.ErrInvalid},
		{"too many headers", native("b:k", "", with(strings.Split(strings.Repeat("ec-h-x,v,", 65), ",")[:130]...)...), envelope.Decoder{}, "ec-h-*", "at most 64", envelope.ErrInvalid},
		{"no type, not json", native("b:k", "hello"), envelope.Decoder{}, "ec-type", "missing", envelope.ErrInvalid},
		{"no type, empty", native("b:k", ""), envelope.Decoder{}, "ec-type", "missing", envelope.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.dec.Decode(tc.rec)
			require.Error(t, err)
			var de *envelope.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.field, de.Field)
			require.Contains(t, de.Reason, tc.reason)
			require.ErrorIs(t, err, tc.err)
			require.ErrorIs(t, err, envelope.ErrInvalid)
			require.Equal(t, "control", de.Topic)
			require.EqualValues(t, 3, de.Partition)
			require.EqualValues(t, 42, de.Offset)
			require.Contains(t, err.Error(), "control/3@42")
			require.Contains(t, err.Error(), tc.field)
		})
	}
}

func TestDecodeDeliverAtAndDelay(t *testing.T) {
	t.Parallel()
	base := []string{"ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", "t"}
	dec := func(kv ...string) (envelope.Envelope, error) {
		return envelope.Decoder{}.Decode(native("b:k", "", append(append([]string{}, base...), kv...)...))
	}
	want := time.Date(2030, 1, 2, 3, 4, 5, 678e6, time.UTC)
	for _, v := range []string{"2030-01-02T03:04:05.678Z", "2030-01-02T05:04:05.678+02:00", "1893553445678"} {
		e, err := dec("ec-deliver-at", v)
		require.NoError(t, err, v)
		require.True(t, want.Equal(e.DeliverAt), "%s: got %v", v, e.DeliverAt)
		require.Equal(t, time.UTC, e.DeliverAt.Location())
	}
	e, err := dec("ec-delay", "1800000")
	require.NoError(t, err)
	require.Equal(t, 30*time.Minute, e.Delay)

	for _, kv := range [][]string{
		{"ec-deliver-at", "tomorrow"},
		{"ec-deliver-at", "0"},
		{"ec-deliver-at", "2030-01-02T03:04:05.6789Z"},
		{"ec-delay", "-5"},
		{"ec-delay", "1.5"},
		{"ec-delay", "5", "ec-deliver-at", "1893553445678"},
		{"ec-delay", "5", "ec-delay", "6"},
	} {
		_, err := dec(kv...)
		require.ErrorIs(t, err, envelope.ErrInvalid, "%v", kv)
	}
	_, err = envelope.Decoder{}.Decode(native("b:k", "", "ec-type", "cancel", "ec-biz", "b", "ec-key", "k", "ec-delay", "5"))
	require.ErrorIs(t, err, envelope.ErrInvalid, "cancel with ec-delay")
	c, err := envelope.Decoder{}.Decode(native("b:k", "", "ec-type", "cancel", "ec-biz", "b", "ec-key", "k"))
	require.NoError(t, err)
	require.Equal(t, envelope.Cancel, c.Type)
}

func TestDecodeMaxPayload(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), envelope.DefaultMaxPayload+1)
	r := native("b:k", "", "ec-type", "prepare", "ec-biz", "b", "ec-key", "k", "ec-topic", "t")
	r.Value = big
	_, err := envelope.Decoder{}.Decode(r)
	require.ErrorIs(t, err, envelope.ErrTooLarge)
	e, err := envelope.Decoder{MaxPayload: -1}.Decode(r)
	require.NoError(t, err)
	require.Len(t, e.Payload, len(big))
	r.Value = big[:envelope.DefaultMaxPayload]
	_, err = envelope.Decoder{}.Decode(r)
	require.NoError(t, err)
}

func TestEncodeValidationErrors(t *testing.T) {
	t.Parallel()
	mod := func(f func(e *envelope.Envelope)) envelope.Envelope {
		e := prepare()
		f(&e)
		return e
	}
	cases := []struct {
		name   string
		e      envelope.Envelope
		substr string
		err    error
	}{
		{"zero", envelope.Envelope{}, "ec-type: unknown type", envelope.ErrUnknownType},
		{"type 9", mod(func(e *envelope.Envelope) { e.Type = 9 }), "type(9)", envelope.ErrUnknownType},
		{"no biz", mod(func(e *envelope.Envelope) { e.BizID = "" }), "ec-biz: required", envelope.ErrInvalid},
		{"biz colon", mod(func(e *envelope.Envelope) { e.BizID = "a:b" }), "ec-biz", envelope.ErrInvalid},
		{"no key", mod(func(e *envelope.Envelope) { e.MessageKey = "" }), "ec-key: required", envelope.ErrInvalid},
		{"no topic", mod(func(e *envelope.Envelope) { e.ForwardTopic = "" }), "ec-topic: required", envelope.ErrInvalid},
		{"commit with payload", envelope.Envelope{Type: envelope.Commit, BizID: "b", MessageKey: "k", Payload: []byte("x")}, "only prepare", envelope.ErrInvalid},
		{"rollback with topic", envelope.Envelope{Type: envelope.Rollback, BizID: "b", MessageKey: "k", ForwardTopic: "t"}, "only prepare", envelope.ErrInvalid},
		{"negative check-after", mod(func(e *envelope.Envelope) { e.CheckAfter = -time.Millisecond }), "ec-check-after", envelope.ErrInvalid},
		{"sub-ms check-after", mod(func(e *envelope.Envelope) { e.CheckAfter = time.Microsecond }), "whole number of milliseconds", envelope.ErrInvalid},
		{"deliver-at and delay", mod(func(e *envelope.Envelope) { e.DeliverAt, e.Delay = time.UnixMilli(2e12), time.Second }), "ec-delay: set together with ec-deliver-at", envelope.ErrInvalid},
		{"negative delay", mod(func(e *envelope.Envelope) { e.Delay = -time.Millisecond }), "ec-delay", envelope.ErrInvalid},
		{"sub-ms delay", mod(func(e *envelope.Envelope) { e.Delay = time.Microsecond }), "ec-delay", envelope.ErrInvalid},
		{"sub-ms deliver-at", mod(func(e *envelope.Envelope) { e.DeliverAt = time.UnixMilli(2e12).Add(time.Microsecond) }), "ec-deliver-at", envelope.ErrInvalid},
		{"cancel with delay", envelope.Envelope{Type: envelope.Cancel, BizID: "b", MessageKey: "k", Delay: time.Second}, "only prepare", envelope.ErrInvalid},
		{"bad verify", mod(func(e *envelope.Envelope) { e.Verify = "mailto:x@y" }), "ec-verify", envelope.ErrInvalid},
		{"reserved header", mod(func(e *envelope.Envelope) { e.Headers = []envelope.Header{{Key: "ec-id"}} }), "reserved", envelope.ErrInvalid},
		{"empty header", mod(func(e *envelope.Envelope) { e.Headers = []envelope.Header{{Key: ""}} }), "empty header name", envelope.ErrInvalid},
		{"too many headers", mod(func(e *envelope.Envelope) { e.Headers = make([]envelope.Header, 65) }), "at most 64", envelope.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := envelope.Encode(tc.e)
			require.ErrorIs(t, err, tc.err)
			require.ErrorIs(t, err, envelope.ErrInvalid)
			require.Contains(t, err.Error(), tc.substr)
			require.ErrorIs(t, tc.e.Validate(), tc.err)
		})
	}
}

func TestEncodeWireFormat(t *testing.T) {
	t.Parallel()
	r, err := envelope.Encode(prepare())
	require.NoError(t, err)
	got := map[string]string{}
	for _, h := range r.Headers {
		if _, dup := got[h.Key]; !dup {
			got[h.Key] = string(h.Value)
		}
	}
	require.Equal(t, map[string]string{
		"ec-type": "prepare", "ec-biz": "order", "ec-key": "42:a", "ec-topic": "orders.created",
		"ec-fkey": "42", "ec-target": "kafka-main", "ec-tag": "created", "ec-verify": "http://order-svc:8080/check",
		"ec-check-after": "1500", "ec-h-traceparent": "00-abc-01", "ec-h-x-empty": "",
	}, got)
	require.Equal(t, "order:42:a", string(r.Key))
	require.Equal(t, `{"id":42}`, string(r.Value))

	r, err = envelope.Encode(envelope.Envelope{Type: envelope.Commit, BizID: "b", MessageKey: "k"})
	require.NoError(t, err)
	require.Empty(t, r.Value)
	require.Len(t, r.Headers, 3)
}

func TestDecodeErrorMatching(t *testing.T) {
	t.Parallel()
	_, err := envelope.Decoder{}.Decode(native("b:k", "", "ec-type", "nope", "ec-biz", "b", "ec-key", "k"))
	require.True(t, errors.Is(err, envelope.ErrUnknownType))
	require.True(t, errors.Is(err, envelope.ErrInvalid))
	require.False(t, errors.Is(err, envelope.ErrTooLarge))
	require.Equal(t, `decode control record control/3@42: ec-type: unknown type "nope" (want prepare, commit, rollback or cancel)`, err.Error())
}

// A decision's value is ignored: kcat cannot send an empty one.
func TestDecisionValueIsIgnored(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"commit", "rollback"} {
		e, err := envelope.Decoder{}.Decode(native("b:k", "commit", "ec-type", typ, "ec-biz", "b", "ec-key", "k"))
		require.NoError(t, err, typ)
		require.Empty(t, e.Payload, typ)
		require.Equal(t, "k", e.MessageKey)
	}
}
