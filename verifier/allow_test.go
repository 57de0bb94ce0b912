package verifier

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/envelope/checkback"
)

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
			ep, err := checkback.ParseEndpoint(tc.ep)
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
// envelope validation (ec-verify on ingest) and the call; both use
// checkback's grammar.
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
			ep, err := checkback.ParseEndpoint(raw)
			require.NoError(t, err)
			require.Equal(t, strings.ToLower(raw[:strings.Index(raw, ":")]), ep.Scheme)
		})
	}
}
