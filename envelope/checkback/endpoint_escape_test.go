package checkback

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An encoded slash, backslash or dot segment in the path would let an
// endpoint leave an allow-list prefix once a server decodes it (the review
// reached /admin through http://127.0.0.1:8090/cb/): the grammar refuses
// them, in any case and on every scheme. The query is not a path: an
// encoded slash there stays allowed.
func TestCheckEndpointRefusesEncodedPathEscapes(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"http://127.0.0.1:8090/cb/..%2fadmin",
		"http://127.0.0.1:8090/cb/%2e%2e%2fadmin",
		"http://127.0.0.1:8090/cb%2f..%2fadmin",
		"http://127.0.0.1:8090/cb%2F..%2Fadmin",
		"http://127.0.0.1:8090/cb/..%5cadmin",
		"http://127.0.0.1:8090/cb/..%5Cadmin",
		`http://127.0.0.1:8090/cb/..\admin`,
		`tri://svc/a.B\..\x/verifyMessage`,
		"http://127.0.0.1:8090/cb/%2e%2e/admin",
		"http://127.0.0.1:8090/cb/%2E./admin",
		"http://127.0.0.1:8090/cb/.%2e",
		"tri://svc/a.B%2f..%2fx/verifyMessage",
		"jsonrpc://svc/cb/..%2Fadmin",
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			err := CheckEndpoint(raw)
			require.ErrorIs(t, err, ErrBadEndpoint)
			_, err = ParseEndpoint(raw)
			require.ErrorIs(t, err, ErrBadEndpoint)
		})
	}
	for _, raw := range []string{
		"http://127.0.0.1:8090/cb/check?next=%2Fadmin",
		"http://127.0.0.1:8090/cb/a%20b",
		"http://127.0.0.1:8090/cb/..x",
		"http://127.0.0.1:8090/cb/%2e%2e%2e",
		`http://127.0.0.1:8090/cb/check?path=a\b`,
	} {
		require.NoError(t, CheckEndpoint(raw), raw)
	}
}
