package checkback

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRequest(t *testing.T) {
	t.Parallel()
	q := Question{BizID: "1001", MessageKey: "order 42/x", Attempt: 3, ID: 9, Timeout: 2 * time.Second}

	e, err := ParseEndpoint("http://h:8080/cb?tenant=a")
	require.NoError(t, err)
	r := e.Request(q)
	require.Equal(t, "GET", r.Method)
	require.Equal(t, "http://h:8080/cb?attempt=3&bizID=1001&messageKey=order+42%2Fx&tenant=a", r.URL.String())
	require.Equal(t, "/cb?attempt=3&bizID=1001&messageKey=order+42%2Fx&tenant=a", r.Target())
	require.Nil(t, r.Body)
	require.Equal(t, "application/json", r.Header.Get("Accept"))
	require.Equal(t, []string{"a"}, e.Query["tenant"], "the endpoint's query is not changed")
	require.Len(t, e.Query, 1)

	e, err = ParseEndpoint("tris://h/com.x.Tx/verifyMessage?version=1.0.0&group=order")
	require.NoError(t, err)
	r = e.Request(q)
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "https://h:50051/com.x.Tx/verifyMessage", r.URL.String())
	require.Equal(t, `[1001,"order 42/x"]`, string(r.Body))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "1.0.0", r.Header.Get("tri-service-version"))
	require.Equal(t, "order", r.Header.Get("tri-service-group"))
	require.Equal(t, "2000", r.Header.Get("tri-service-timeout"))
	require.Equal(t, "2000", r.Header.Get("Triple-Timeout-Ms"))

	e, err = ParseEndpoint("jsonrpc://h/com.x.Tx?method=VerifyMessage&bizid=string")
	require.NoError(t, err)
	r = e.Request(q)
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "http://h:80/com.x.Tx", r.URL.String())
	require.Equal(t, `{"jsonrpc":"2.0","method":"VerifyMessage","params":["1001","order 42/x"],"id":9}`, string(r.Body))
	require.Empty(t, r.Header.Get("tri-service-timeout"))
}

func TestBizParam(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		enc   BizIDEncoding
		bizID string
		want  string
	}{
		{BizIDAuto, "1001", `1001`},
		{BizIDAuto, "0", `0`},
		{BizIDAuto, "9223372036854775807", `9223372036854775807`},
		{BizIDAuto, "9223372036854775808", `"9223372036854775808"`},
		{BizIDAuto, "007", `"007"`},
		{BizIDAuto, "-5", `"-5"`},
		{BizIDAuto, "b-7", `"b-7"`},
		{BizIDInt, "007", `7`},
		{BizIDInt, "-5", `-5`},
		{BizIDInt, "b-7", `"b-7"`},
		{BizIDString, "1001", `"1001"`},
	} {
		b, err := json.Marshal(BizParam(tc.bizID, tc.enc))
		require.NoError(t, err)
		require.Equal(t, tc.want, string(b), "%v %s", tc.enc, tc.bizID)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	args := func(s string) []json.RawMessage {
		var a []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &a))
		return a
	}
	for _, tc := range []struct{ in, bizID, err string }{
		{`[1001,"k"]`, "1001", ""},
		{`["b-7","k"]`, "b-7", ""},
		{`[9223372036854775808,"k"]`, "9223372036854775808", ""},
		{`[1001]`, "", "want 2 arguments"},
		{`[1001,"k",3]`, "", "want 2 arguments"},
		{`[{},"k"]`, "", "number or a string"},
		{`[1001,5]`, "", "messageKey must be a string"},
		{`["","k"]`, "", "must not be empty"},
		{`[1,""]`, "", "must not be empty"},
	} {
		bizID, key, err := ParseArgs(args(tc.in))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.bizID, bizID)
		require.Equal(t, "k", key)
	}
}
