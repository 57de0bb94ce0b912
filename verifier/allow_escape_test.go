package verifier

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
)

// The allow check compares the escaped path, so an endpoint that decodes
// to a path below the prefix but is written outside it is not allowed,
// even if it got past the endpoint grammar (built here by hand).
func TestAllowMatchesEscapedPath(t *testing.T) {
	t.Parallel()
	r, err := parseAllowRule("http://127.0.0.1:8090/cb/")
	require.NoError(t, err)
	for _, p := range []string{"/cb/..%2fadmin", "/cb/%2e%2e%2fadmin", "/cb%2f..%2fadmin", "/cb%2fx", "/cb%2Fx", "/cb%5cx", "/cb/%2e%2e/admin", "/cb/%2E./admin", `/cb/..\admin`} {
		ep := checkback.Endpoint{Protocol: checkback.ProtoHTTP, Scheme: "http", Host: "127.0.0.1:8090", Path: p}
		require.False(t, r.allows(ep), p)
	}
	for _, p := range []string{"/cb/check", "/cb", "/cb/a%20b"} {
		ep := checkback.Endpoint{Protocol: checkback.ProtoHTTP, Scheme: "http", Host: "127.0.0.1:8090", Path: p}
		require.True(t, r.allows(ep), p)
	}
	// A prefix written escaped matches the endpoint written the same way.
	r, err = parseAllowRule("http://127.0.0.1:8090/a%20b/")
	require.NoError(t, err)
	require.True(t, r.allows(checkback.Endpoint{Scheme: "http", Host: "127.0.0.1:8090", Path: "/a%20b/x"}))
}

// An allow prefix is not escaped by a segment Tomcat, Jetty or Spring read
// as "..": with path parameters ("..;", "..;x=1", "..%3b") or escaped
// twice ("%252e%252e"). Such an endpoint is never called: the message is
// parked VERIFY_FAILED with no attempt, as the finding reproduced it (a
// check-back through the verifier to a prefix-allowed server).
func TestAllowPrefixNotEscapedByDotSegmentSpellings(t *testing.T) {
	t.Parallel()
	srv := newProducer(t, replying(checkback.DecisionCommit))
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		BizIDs: map[string]BizConfig{"b": {Allow: []string{srv.endpoint("http", "/cb/")}}},
	})
	bypasses := []string{"/cb/..;/admin", "/cb/..;x=1/admin", "/cb/..%3b/admin", "/cb/..%3B/admin", "/cb/%252e%252e/admin",
		"/cb/.;/../admin", "/cb/%25252e%25252e/admin", "/cb/..%00/admin", "/cb/%252fadmin", "/cb/%c0%ae%c0%ae/admin"}
	for i, p := range bypasses {
		h.prepare("b", fmt.Sprintf("bypass-%d", i), srv.endpoint("http", p))
	}
	h.prepare("b", "good", srv.endpoint("http", "/cb/check;jsessionid=1"))
	for i, p := range bypasses {
		m := h.waitStatus("b", fmt.Sprintf("bypass-%d", i), state.VerifyFailed)
		require.Zero(t, m.VerifyAttempts, p)
	}
	h.waitStatus("b", "good", state.Committed)
	var targets []string
	for _, r := range srv.requests() {
		targets = append(targets, r.Target[:strings.IndexAny(r.Target+"?", "?")])
	}
	require.Equal(t, []string{"/cb/check;jsessionid=1"}, targets, "only the endpoint below the prefix was called")

	// The comparison itself reads the path as a server does, whatever got
	// past the grammar (endpoints built by hand).
	r, err := parseAllowRule(srv.endpoint("http", "/cb/"))
	require.NoError(t, err)
	host := strings.TrimPrefix(srv.srv.URL, "http://")
	for _, p := range bypasses {
		require.False(t, r.allows(checkback.Endpoint{Scheme: "http", Host: host, Path: p}), p)
	}
	require.True(t, r.allows(checkback.Endpoint{Scheme: "http", Host: host, Path: "/c%62/check"}), "a plain character escaped is the same path")
	require.True(t, r.allows(checkback.Endpoint{Scheme: "http", Host: host, Path: "/cb;v=1/check"}), "Tomcat reads it as /cb/check")
	_, err = parseAllowRule("http://127.0.0.1:8090/cb/..;/")
	require.Error(t, err)
}
