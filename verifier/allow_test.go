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

// A network in brackets in place of the host allows every IP address of
// it on the rule's port (the scheme's default when none is written),
// IPv4-mapped IPv6 addresses as their IPv4 address; never a name.
func TestAllowNetworkRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, ep string
		ok       bool
	}{
		{"tri://[10.0.0.0/8]", "tri://10.1.2.3:50051/a.B/verifyMessage", true},
		{"tri://[10.0.0.0/8]", "tri://10.1.2.3/a.B/verifyMessage", true},
		{"tri://[10.0.0.0/8]", "tri://11.0.0.1:50051/a.B/verifyMessage", false},
		{"tri://[10.0.0.0/8]", "tri://10.1.2.3:20000/a.B/verifyMessage", false},
		{"tri://[10.0.0.0/8]:20000", "tri://10.1.2.3:20000/a.B/verifyMessage", true},
		{"TRI://[10.0.0.0/8]:20000", "tri://10.1.2.3:20000/a.B/verifyMessage", true},
		{"tri://[10.0.0.0/8]", "tris://10.1.2.3:50051/a.B/verifyMessage", false},
		{"tri://[10.0.0.0/8]", "jsonrpc://10.1.2.3:50051/a.B", false},
		{"tri://[10.0.0.0/8]", "tri://[::ffff:10.1.2.3]:50051/a.B/verifyMessage", true},
		{"tri://[10.0.0.0/8]", "tri://[::1]:50051/a.B/verifyMessage", false},
		{"tri://[10.0.0.0/8]", "tri://ten.internal:50051/a.B/verifyMessage", false},
		{"tri://[10.0.0.0/8]", "tri://10.evil.com:50051/a.B/verifyMessage", false},
		{"tri://[192.168.4.0/22]:8080", "tri://192.168.7.255:8080/a.B/m", true},
		{"tri://[192.168.4.0/22]:8080", "tri://192.168.8.0:8080/a.B/m", false},
		{"tri://[fd00::/8]:20000", "tri://[fd12::5]:20000/a.B/m", true},
		{"tri://[fd00::/8]:20000", "tri://[fe80::5]:20000/a.B/m", false},
		{"tri://[fd00::/8]:20000", "tri://10.0.0.1:20000/a.B/m", false},
		{"tri://[10.0.0.0/8]/com.shop.A/", "tri://10.0.0.9:50051/com.shop.A/verifyMessage", true},
		{"tri://[10.0.0.0/8]/com.shop.A/", "tri://10.0.0.9:50051/com.shop.B/verifyMessage", false},
		{"jsonrpc://[10.0.0.0/8]:8080", "jsonrpc://10.0.0.9:8080/com.shop.A", true},
		{"zookeeper://[10.0.0.0/24]", "zookeeper://10.0.0.7:2181/com.shop.A", true},
		{"http://[10.0.0.0/8]:8080/cb/", "http://10.0.0.9:8080/cb/check", true},
		{"http://[10.0.0.0/8]:8080/cb/", "http://10.0.0.9:8080/admin", false},
	} {
		t.Run(tc.rule+" "+tc.ep, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, CheckAllowEntry(tc.rule))
			r, err := parseAllowRule(tc.rule)
			require.NoError(t, err)
			ep, err := checkback.ParseEndpoint(tc.ep)
			require.NoError(t, err)
			require.Equal(t, tc.ok, r.allows(ep))
		})
	}
}

// A rule that could be read two ways, or a network that is not one, is
// refused with what to write instead.
func TestAllowNetworkRulesRefused(t *testing.T) {
	t.Parallel()
	for rule, want := range map[string]string{
		"tri://10.0.0.0/8":             `ambiguous: "tri://10.0.0.0/8" reads as the path prefix /8 on the single host 10.0.0.0; a network is written in brackets in place of the host, tri://[10.0.0.0/8]`,
		"tri://10.0.0.0:50051/8":       "tri://[10.0.0.0/8]",
		"tri://10.0.0.0/8/com.shop.A/": "ambiguous",
		"tri://[fd00::]/16":            "tri://[fd00::/16]",
		"tri://[10.0.0.5/8]":           "ambiguous: [10.0.0.5/8] has bits set past the prefix length: write the network [10.0.0.0/8] or the single host 10.0.0.5",
		"tri://[fd00::5/8]":            "write the network [fd00::/8] or the single host [fd00::5]",
		"tri://[0.0.0.0/0]":            "is every address",
		"tri://[::/0]":                 "is every address",
		"tri://[::ffff:10.0.0.0/104]":  "IPv4-mapped IPv6 network: write the IPv4 network",
		"tri://[10.0.0.0/33]":          "is not a network",
		"tri://[10.0.0.0/x]":           "is not a network",
		"tri://[fe80::%eth0/64]":       "is not a network",
		"tri://[10.0.0.0/8]:x":         "invalid port",
		"tri://[10.0.0.0/8]?q=1":       "no query",
		"tri://[10.0.0.0/8]/a%2Fb":     "encoded slash",
		"gopher://[10.0.0.0/8]":        `scheme "gopher"`,
	} {
		err := CheckAllowEntry(rule)
		require.Error(t, err, rule)
		require.Contains(t, err.Error(), want, rule)
	}
	// Not ambiguous: a name, or a path that is not a number.
	for _, ok := range []string{"http://svc/8", "http://10.0.0.1/v8", "http://10.0.0.1:8080/cb/8", "tri://[fd00::1]"} {
		require.NoError(t, CheckAllowEntry(ok), ok)
	}
}
