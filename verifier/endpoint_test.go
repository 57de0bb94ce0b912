package verifier

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib/envelope"
)

func TestParseEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want Endpoint
	}{
		{"http://10.0.0.1:8080/check", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "10.0.0.1:8080", Path: "/check"}},
		{"HTTPS://Example.COM", Endpoint{Protocol: ProtoHTTP, Scheme: "https", TLS: true, Host: "example.com:443", Path: "/"}},
		{"http://h/cb?x=1", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "h:80", Path: "/cb"}},
		{"tri://svc:50052/com.example.TxChecker/verifyMessage?version=1.0.0&group=order&bizid=int",
			Endpoint{Protocol: ProtoTriple, Scheme: "tri", Host: "svc:50052", Path: "/com.example.TxChecker/verifyMessage",
				Interface: "com.example.TxChecker", Method: "verifyMessage", Version: "1.0.0", Group: "order", BizID: BizIDInt}},
		{"tris://svc/a.B/m", Endpoint{Protocol: ProtoTriple, Scheme: "tris", TLS: true, Host: "svc:50051", Path: "/a.B/m", Interface: "a.B", Method: "m"}},
		{"jsonrpc://svc:8080/com.example.TxChecker?method=VerifyMessage&bizid=string",
			Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpc", Host: "svc:8080", Path: "/com.example.TxChecker", Method: "VerifyMessage", BizID: BizIDString}},
		{"jsonrpcs://svc/x", Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpcs", TLS: true, Host: "svc:443", Path: "/x", Method: "verifyMessage"}},
		{"http://[::1]:9/x", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "[::1]:9", Path: "/x"}},
		{"Tri://svc/a.B/m", Endpoint{Protocol: ProtoTriple, Scheme: "tri", Host: "svc:50051", Path: "/a.B/m", Interface: "a.B", Method: "m"}},
		{"JSONRPC://svc/x", Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpc", Host: "svc:80", Path: "/x", Method: "verifyMessage"}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEndpoint(tc.raw)
			require.NoError(t, err)
			got.Query = nil
			tc.want.Raw = tc.raw
			require.Equal(t, tc.want, got)
		})
	}
	got, err := ParseEndpoint("http://h/cb?x=1&y=2")
	require.NoError(t, err)
	require.Equal(t, "1", got.Query.Get("x"))
}

func TestParseEndpointErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, msg string }{
		{"", "empty"},
		{"ftp://h/x", `unsupported scheme "ftp"`},
		{"h:8080/x", `unsupported scheme "h"`},
		{"/just/a/path", "no scheme"},
		{"dubbo://registry:2181/com.example.TxChecker", "registry addresses are not supported"},
		{"tri:///com.example.TxChecker/verifyMessage", "no host"},
		{"tri://svc:1/com.example.TxChecker", "want tri://host:port/<interface>/<method>"},
		{"tri://svc:1/a/b/c", "want tri://host:port/<interface>/<method>"},
		{"tri://svc:1/a/b?bizid=long", `bizid="long"`},
		{"jsonrpc://svc:1", "want jsonrpc://host:port/<service path>"},
		{"http://h:/x", "empty port"},
		{"http://h/a/../admin", "dot segments"},
		{"http://user:pw@h:1/%zz", "invalid URL escape"},
		{"http:opaque", "not a hierarchical URL"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEndpoint(tc.raw)
			require.ErrorIs(t, err, ErrBadEndpoint)
			require.ErrorContains(t, err, tc.msg)
			require.NotContains(t, err.Error(), "pw")
		})
	}
}

func TestAllowRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, ep string
		ok       bool
	}{
		{"http://10.0.0.1:8080", "http://10.0.0.1:8080/any/path?q=1", true},
		{"http://10.0.0.1:8080", "http://10.0.0.1:8081/x", false},
		{"http://10.0.0.1:8080", "https://10.0.0.1:8080/x", false},
		{"http://10.0.0.1", "http://10.0.0.1:80/x", true},
		{"http://a.com", "http://a.com.evil.com/x", false},
		{"http://a.com", "http://evil.com/?a.com", false},
		{"http://a.com/cb/", "http://a.com/cb/check", true},
		{"http://a.com/cb", "http://a.com/cb", true},
		{"http://a.com/cb", "http://a.com/cb/x", true},
		{"http://a.com/cb", "http://a.com/cbx", false},
		{"http://a.com/cb/", "http://a.com/other", false},
		{"tri://svc:50051", "tri://svc:50051/a.B/verifyMessage", true},
		{"tri://svc:50051/a.B/", "tri://svc:50051/a.C/verifyMessage", false},
		{"tri://svc:50051", "http://svc:50051/x", false},
		{"jsonrpc://svc:8080/a.B", "jsonrpc://svc:8080/a.B?method=verifyMessage", true},
	} {
		t.Run(tc.rule+" "+tc.ep, func(t *testing.T) {
			t.Parallel()
			r, err := parseAllowRule(tc.rule)
			require.NoError(t, err)
			ep, err := ParseEndpoint(tc.ep)
			require.NoError(t, err)
			require.Equal(t, tc.ok, r.allows(ep))
		})
	}
	for _, bad := range []string{"10.0.0.1:8080", "http://h/x?q=1", "http://u@h", "gopher://h", "http://"} {
		_, err := parseAllowRule(bad)
		require.Error(t, err, bad)
	}
}

// The scheme is case-insensitive in both places an endpoint is checked:
// envelope validation (ec-verify on ingest) and this parser (the call).
func TestSchemeCaseAgreesWithEnvelope(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"HTTP://h:1/check", "Https://h", "Tri://h:1/a.B/m", "TRIS://h/a.B/m?bizid=string",
		"JSONRPC://h/p", "JsonRpcS://h:2/p?method=m",
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			e := envelope.Envelope{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: "t", Verify: raw}
			require.NoError(t, e.Validate())
			ep, err := ParseEndpoint(raw)
			require.NoError(t, err)
			require.Equal(t, strings.ToLower(raw[:strings.Index(raw, ":")]), ep.Scheme)
		})
	}
}
