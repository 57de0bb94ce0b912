package checkback

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// An answer table row: the body (and Content-Type) a producer sent to a
// question about key "k" (JSON-RPC id 7), and what it reads as.
type answerCase struct {
	name, ct, body string
	want           Decision
	// refused: unknown and ErrUnreadable (or a JSON-RPC error).
	refused bool
	// loose: accepted as commit or rollback before answers were strict.
	loose bool
}

const jsonCT = "application/json"

var answerTable = map[Protocol][]answerCase{
	ProtoHTTP: {
		{name: "TrustMessage commit", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, want: DecisionCommit},
		{name: "TrustMessage rollback", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":3}}`, want: DecisionRollback},
		{name: "TrustMessage unknown", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":1}}`, want: DecisionUnknown},
		{name: "TrustMessage with extra fields", ct: "application/json;charset=UTF-8", body: ` {"status":"SUCCESS","code":0,"message":"ok","data":{"messageKey":"k","messageStatus":2,"bizID":1}} `, want: DecisionCommit},
		{name: "TrustMessage any Content-Type", ct: "text/plain", body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, want: DecisionCommit},
		{name: "decision commit with key", ct: jsonCT, body: `{"messageKey":"k","decision":"commit"}`, want: DecisionCommit},
		{name: "decision rollback with key", ct: jsonCT, body: `{"messageKey":"k","decision":"rollback"}`, want: DecisionRollback},
		{name: "decision unknown with key", ct: jsonCT, body: `{"messageKey":"k","decision":"unknown"}`, want: DecisionUnknown},

		{name: "bare 2 as text/html", ct: "text/html", body: `2`, refused: true, loose: true},
		{name: "bare 2 as JSON", ct: jsonCT, body: `2`, refused: true, loose: true},
		{name: "bare 3", ct: jsonCT, body: `3`, refused: true, loose: true},
		{name: "decision without key", ct: jsonCT, body: `{"decision":"commit"}`, refused: true, loose: true},
		{name: "decision upper case", ct: jsonCT, body: `{"messageKey":"k","decision":"ROLLBACK"}`, refused: true, loose: true},
		{name: "TrustMessage without key", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageStatus":2}}`, refused: true, loose: true},
		{name: "JSON-RPC shape", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2}`, refused: true},
		{name: "decision for another key", ct: jsonCT, body: `{"messageKey":"other","decision":"commit"}`, refused: true},
		{name: "TrustMessage for another key", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"other","messageStatus":2}}`, refused: true},
		{name: "key not a string", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":7,"messageStatus":2}}`, refused: true},
		{name: "key at the wrong level", ct: jsonCT, body: `{"status":"SUCCESS","messageKey":"k","data":{"messageStatus":2}}`, refused: true},
		{name: "FAIL", ct: jsonCT, body: `{"status":"FAIL","message":"boom","data":{"messageKey":"k","messageStatus":2}}`, refused: true},
		{name: "lower-case success", ct: jsonCT, body: `{"status":"success","data":{"messageKey":"k","messageStatus":2}}`, refused: true},
		{name: "SUCCESS without data", ct: jsonCT, body: `{"status":"SUCCESS"}`, refused: true},
		{name: "SUCCESS with null data", ct: jsonCT, body: `{"status":"SUCCESS","data":null}`, refused: true},
		{name: "status as a string", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":"2"}}`, refused: true},
		{name: "status 2.0", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2.0}}`, refused: true},
		{name: "status 0", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":0}}`, refused: true},
		{name: "status 22", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":22}}`, refused: true},
		{name: "both decision and status", ct: jsonCT, body: `{"messageKey":"k","decision":"commit","status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, refused: true},
		{name: "decision yes", ct: jsonCT, body: `{"messageKey":"k","decision":"yes"}`, refused: true},
		{name: "decision a number", ct: jsonCT, body: `{"messageKey":"k","decision":2}`, refused: true},
		{name: "other object", ct: jsonCT, body: `{"ok":true}`, refused: true},
		{name: "truncated", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2`, refused: true},
		{name: "HTML", ct: "text/html", body: `<html>OK</html>`, refused: true},
		{name: "empty", ct: jsonCT, body: ``, refused: true},
		{name: "string", ct: jsonCT, body: `"commit"`, refused: true},
		{name: "array", ct: jsonCT, body: `[2]`, refused: true},
		{name: "null", ct: jsonCT, body: `null`, refused: true},
	},
	ProtoTriple: {
		{name: "commit", ct: jsonCT, body: `2`, want: DecisionCommit},
		{name: "rollback", ct: jsonCT, body: " 3\n", want: DecisionRollback},
		{name: "unknown", ct: jsonCT, body: `1`, want: DecisionUnknown},
		{name: "charset", ct: "application/json; charset=utf-8", body: `2`, want: DecisionCommit},

		{name: "2 as text/html", ct: "text/html", body: `2`, refused: true, loose: true},
		{name: "2 as text/plain", ct: "text/plain; charset=utf-8", body: `2`, refused: true, loose: true},
		{name: "2 without Content-Type", ct: "", body: `2`, refused: true, loose: true},
		{name: "decision object", ct: jsonCT, body: `{"decision":"commit"}`, refused: true, loose: true},
		{name: "TrustMessage object", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, refused: true, loose: true},
		{name: "JSON-RPC shape", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2}`, refused: true},
		{name: "string 2", ct: jsonCT, body: `"2"`, refused: true},
		{name: "2.0", ct: jsonCT, body: `2.0`, refused: true},
		{name: "22", ct: jsonCT, body: `22`, refused: true},
		{name: "0", ct: jsonCT, body: `0`, refused: true},
		{name: "-2", ct: jsonCT, body: `-2`, refused: true},
		{name: "2 3", ct: jsonCT, body: `2 3`, refused: true},
		{name: "array", ct: jsonCT, body: `[2]`, refused: true},
		{name: "true", ct: jsonCT, body: `true`, refused: true},
		{name: "null", ct: jsonCT, body: `null`, refused: true},
		{name: "empty", ct: jsonCT, body: ``, refused: true},
		{name: "Dubbo error body", ct: jsonCT, body: `{"code":"invalid_argument","message":"x"}`, refused: true},
	},
	ProtoJSONRPC: {
		{name: "commit", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2}`, want: DecisionCommit},
		{name: "rollback, id as a string", ct: jsonCT, body: `{"jsonrpc":"2.0","id":"7","result":3}`, want: DecisionRollback},
		{name: "unknown", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":1}`, want: DecisionUnknown},
		{name: "null error", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2,"error":null}`, want: DecisionCommit},
		{name: "any Content-Type", ct: "text/plain", body: `{"jsonrpc":"2.0","id":7,"result":2}`, want: DecisionCommit},

		{name: "result a decision object", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":{"decision":"commit"}}`, refused: true, loose: true},
		{name: "result a TrustMessage object", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":{"status":"SUCCESS","data":{"messageStatus":2}}}`, refused: true, loose: true},
		{name: "result a string", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":"2"}`, refused: true},
		{name: "result 2.0", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2.0}`, refused: true},
		{name: "result 4", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":4}`, refused: true},
		{name: "error", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`, refused: true},
		{name: "result and error", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":2,"error":{"code":1,"message":"x"}}`, refused: true},
		{name: "other id", ct: jsonCT, body: `{"jsonrpc":"2.0","id":8,"result":2}`, refused: true},
		{name: "no id", ct: jsonCT, body: `{"jsonrpc":"2.0","result":2}`, refused: true},
		{name: "no version", ct: jsonCT, body: `{"id":7,"result":2}`, refused: true},
		{name: "no result", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7}`, refused: true},
		{name: "null result", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"result":null}`, refused: true},
		{name: "truncated", ct: jsonCT, body: `{"jsonrpc":"2.0","id":7,"res`, refused: true},
		{name: "bare 2", ct: jsonCT, body: `2`, refused: true},
		{name: "TrustMessage shape", ct: jsonCT, body: `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, refused: true},
	},
}

func TestDecodeAnswer(t *testing.T) {
	t.Parallel()
	q := Question{BizID: "1001", MessageKey: "k", ID: 7}
	for p, cases := range answerTable {
		for _, tc := range cases {
			t.Run(p.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				d, err := DecodeAnswer(p, q, tc.ct, []byte(tc.body))
				if !tc.refused {
					require.NoError(t, err)
					require.Equal(t, tc.want, d)
					return
				}
				require.Equal(t, DecisionUnknown, d, "a refused answer is unknown, never commit")
				require.Error(t, err)
				var rpcErr struct {
					Error json.RawMessage `json:"error"`
				}
				if p == ProtoJSONRPC && json.Unmarshal([]byte(tc.body), &rpcErr) == nil && len(rpcErr.Error) > 0 {
					require.ErrorContains(t, err, "JSON-RPC error")
					return
				}
				require.ErrorIs(t, err, ErrUnreadable)
			})
		}
	}
	_, err := DecodeAnswer(Protocol(0), q, jsonCT, []byte(`2`))
	require.ErrorIs(t, err, ErrUnreadable)
}

// Every refused case that the loose parser took as a decision is listed,
// so the change of behaviour is visible in one place.
func TestDecodeAnswerListsTheOldLooseCases(t *testing.T) {
	t.Parallel()
	n := 0
	for _, cases := range answerTable {
		for _, tc := range cases {
			if tc.loose {
				require.True(t, tc.refused, tc.name)
				n++
			}
		}
	}
	require.Equal(t, 13, n)
}

func TestJSONRPCErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := DecodeAnswer(ProtoJSONRPC, Question{ID: 7}, jsonCT,
		[]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`))
	require.EqualError(t, err, `JSON-RPC error -32601: "no such method"`)
	require.NotErrorIs(t, err, ErrUnreadable)
}

// The encoders write exactly what DecodeAnswer accepts.
func TestAnswerEncodersRoundTrip(t *testing.T) {
	t.Parallel()
	for _, d := range []Decision{DecisionCommit, DecisionRollback, DecisionUnknown} {
		q := Question{BizID: "1001", MessageKey: `k "quoted"/é`, ID: 42}
		got, err := DecodeAnswer(ProtoHTTP, q, jsonCT, HTTPAnswer(q.MessageKey, d))
		require.NoError(t, err)
		require.Equal(t, d, got)
		got, err = DecodeAnswer(ProtoTriple, q, jsonCT, TripleAnswer(d))
		require.NoError(t, err)
		require.Equal(t, d, got)
		for _, id := range []string{`42`, `"42"`} {
			got, err = DecodeAnswer(ProtoJSONRPC, q, jsonCT, JSONRPCAnswer(json.RawMessage(id), d))
			require.NoError(t, err)
			require.Equal(t, d, got)
		}
	}
	require.JSONEq(t, `{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, string(HTTPAnswer("k", DecisionCommit)))
	require.Equal(t, "3", string(TripleAnswer(DecisionRollback)))
	require.Equal(t, `{"jsonrpc":"2.0","id":null,"result":1}`, string(JSONRPCAnswer(nil, DecisionUnknown)))
	require.Equal(t, `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"x"}}`, string(JSONRPCError(json.RawMessage(`5`), RPCInternalError, "x")))
	require.Equal(t, "1", string(TripleAnswer(Decision(9))), "anything unexpected answers unknown")
}

func TestDecisionString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "commit", DecisionCommit.String())
	require.Equal(t, "rollback", DecisionRollback.String())
	require.Equal(t, "unknown", DecisionUnknown.String())
	require.Equal(t, "unknown", Decision(9).String())
}
