package verifier

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body    string
		want    Decision
		wantErr bool
	}{
		{`2`, DecisionCommit, false},
		{" 3\n", DecisionRollback, false},
		{`1`, DecisionUnknown, false},
		{`{"decision":"commit"}`, DecisionCommit, false},
		{`{"decision":"ROLLBACK"}`, DecisionRollback, false},
		{`{"decision":"unknown"}`, DecisionUnknown, false},
		{`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":2}}`, DecisionCommit, false},
		{`{"status":"SUCCESS","data":{"messageStatus":3}}`, DecisionRollback, false},
		{`{"status":"SUCCESS","data":{"messageKey":"k","messageStatus":1}}`, DecisionUnknown, false},
		// Everything else is unknown and an error; never commit.
		{``, DecisionUnknown, true},
		{`<html>OK</html>`, DecisionUnknown, true},
		{`{"status":"SUCCESS","data":{"messageStatus":2`, DecisionUnknown, true},
		{`{"status":"FAIL","message":"boom","data":{"messageStatus":2}}`, DecisionUnknown, true},
		{`{"status":"success","data":{"messageStatus":2}}`, DecisionUnknown, true},
		{`{"status":"SUCCESS"}`, DecisionUnknown, true},
		{`{"status":"SUCCESS","data":{"messageKey":"other","messageStatus":2}}`, DecisionUnknown, true},
		{`{"status":"SUCCESS","data":{"messageStatus":"2"}}`, DecisionUnknown, true},
		{`{"decision":"commit","status":"SUCCESS"}`, DecisionUnknown, true},
		{`{"decision":"yes"}`, DecisionUnknown, true},
		{`{"decision":2}`, DecisionUnknown, true},
		{`{"ok":true}`, DecisionUnknown, true},
		{`"2"`, DecisionUnknown, true},
		{`"commit"`, DecisionUnknown, true},
		{`true`, DecisionUnknown, true},
		{`2.0`, DecisionUnknown, true},
		{`22`, DecisionUnknown, true},
		{`0`, DecisionUnknown, true},
		{`-2`, DecisionUnknown, true},
		{`[2]`, DecisionUnknown, true},
		{`null`, DecisionUnknown, true},
		{`2 3`, DecisionUnknown, true},
	} {
		t.Run(tc.body, func(t *testing.T) {
			t.Parallel()
			d, err := parseDecision([]byte(tc.body), "k")
			require.Equal(t, tc.want, d)
			if tc.wantErr {
				require.ErrorIs(t, err, errUnreadable)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestParseJSONRPC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body    string
		want    Decision
		wantErr string
	}{
		{`{"jsonrpc":"2.0","id":7,"result":2}`, DecisionCommit, ""},
		{`{"jsonrpc":"2.0","id":"7","result":3}`, DecisionRollback, ""},
		{`{"jsonrpc":"2.0","id":7,"result":1}`, DecisionUnknown, ""},
		{`{"jsonrpc":"2.0","id":7,"result":{"decision":"commit"}}`, DecisionCommit, ""},
		{`{"jsonrpc":"2.0","id":7,"result":2,"error":null}`, DecisionCommit, ""},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`, DecisionUnknown, "JSON-RPC error -32601: \"no such method\""},
		{`{"jsonrpc":"2.0","id":7,"result":2,"error":{"code":1,"message":"x"}}`, DecisionUnknown, "JSON-RPC error 1"},
		{`{"jsonrpc":"2.0","id":8,"result":2}`, DecisionUnknown, "JSON-RPC id"},
		{`{"jsonrpc":"2.0","result":2}`, DecisionUnknown, "JSON-RPC id"},
		{`{"id":7,"result":2}`, DecisionUnknown, `jsonrpc "" (want 2.0)`},
		{`{"jsonrpc":"2.0","id":7}`, DecisionUnknown, "without result"},
		{`{"jsonrpc":"2.0","id":7,"result":null}`, DecisionUnknown, "without result"},
		{`{"jsonrpc":"2.0","id":7,"result":"2"}`, DecisionUnknown, "unreadable"},
		{`{"jsonrpc":"2.0","id":7,"res`, DecisionUnknown, "not a JSON-RPC response"},
		{`2`, DecisionUnknown, "not a JSON-RPC response"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			t.Parallel()
			d, err := parseJSONRPC([]byte(tc.body), 7, "k")
			require.Equal(t, tc.want, d)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}
