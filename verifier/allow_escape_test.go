package verifier

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
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
