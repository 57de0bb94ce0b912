package checkback

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The byte-for-byte path and the parse agree on every answer HTTPAnswer
// writes, including keys it must escape (which leave the fast path).
func TestDecodeHTTPCanonicalAgreesWithTheParse(t *testing.T) {
	t.Parallel()
	keys := []string{"k", "order-42", "", "a<b", `q"uote`, `back\slash`, "tab\tkey", "é", "a&b>c"}
	for _, key := range keys {
		for _, d := range []Decision{DecisionCommit, DecisionRollback, DecisionUnknown} {
			body := HTTPAnswer(key, d)
			got, err := DecodeAnswer(ProtoHTTP, Question{MessageKey: key}, "", body)
			require.NoError(t, err, "key %q body %s", key, body)
			require.Equal(t, d, got, "key %q", key)
			// The same answer for another key is refused on either path.
			got, err = DecodeAnswer(ProtoHTTP, Question{MessageKey: key + "x"}, "", body)
			require.ErrorIs(t, err, ErrUnreadable, "key %q", key)
			require.Equal(t, DecisionUnknown, got)
		}
	}
}

// Near misses of the canonical bytes are not taken by the fast path: each
// is either refused or read by the parse to what it says.
func TestDecodeHTTPCanonicalNearMisses(t *testing.T) {
	t.Parallel()
	refused := []string{
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":4}}`,
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":0}}`,
		`{"status":"SUCCESS","data":{"messageKey":"kk","messageStatus":2}}`,
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}}`,
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}`,
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2]}`,
		`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":"2"}}`,
		`{"status":"SUCCESs","data":{"messageKey":"k","messageStatus":2}}`,
		`{"Status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`,
	}
	for _, b := range refused {
		d, ok := canonicalHTTP([]byte(b), "k")
		require.False(t, ok, b)
		require.Equal(t, DecisionUnknown, d)
		d, err := DecodeAnswer(ProtoHTTP, Question{MessageKey: "k"}, "", []byte(b))
		require.ErrorIs(t, err, ErrUnreadable, b)
		require.Equal(t, DecisionUnknown, d, b)
	}
	// A key with a quote written raw would be invalid JSON: never taken.
	b := `{"status":"SUCCESS","data":{"messageKey":"a"b","messageStatus":2}}`
	_, ok := canonicalHTTP([]byte(b), `a"b`)
	require.False(t, ok)
	_, err := DecodeAnswer(ProtoHTTP, Question{MessageKey: `a"b`}, "", []byte(b))
	require.ErrorIs(t, err, ErrUnreadable)
	// Spaces and extra fields leave the fast path and still read.
	d, err := DecodeAnswer(ProtoHTTP, Question{MessageKey: "k"}, "", []byte(`{"status": "SUCCESS", "data": {"messageKey": "k", "messageStatus": 3}}`))
	require.NoError(t, err)
	require.Equal(t, DecisionRollback, d)
}

// BenchmarkDecodeHTTPAnswer is the cost of reading one check-back answer
// as clientlib's handler writes it, and of the decision shape (parsed).
func BenchmarkDecodeHTTPAnswer(b *testing.B) {
	q := Question{BizID: "bench", MessageKey: "01JDXK6Z3V8Q9R0S1T2U3V4W5X-000042"}
	for _, bc := range []struct{ name, body string }{
		{"trustmessage", string(HTTPAnswer(q.MessageKey, DecisionCommit)) + "\n"},
		{"decision", `{"messageKey":"` + q.MessageKey + `","decision":"commit"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if d, err := DecodeAnswer(ProtoHTTP, q, "application/json", body); err != nil || d != DecisionCommit {
					b.Fatal(d, err)
				}
			}
		})
	}
}
