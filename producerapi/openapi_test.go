package producerapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The document is served as is and is OpenAPI 3; every documented path
// and method reaches its route (never the mux's 404 or 405), and the
// routes are exactly the documented operations (documentedStatuses).
// TestMain checks the statuses.
func TestOpenAPIDocumentMatchesTheRouter(t *testing.T) {
	f := newFixture(t)
	res, body := f.do("GET", "/v1/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.Equal(t, string(OpenAPI()), body)
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)
	_, err := documentedStatuses()
	require.NoError(t, err)

	for path, ops := range doc.Paths {
		for method := range ops {
			target := strings.NewReplacer("{bizID}", "orders", "{key}", "k").Replace(path)
			req, _ := http.NewRequest(strings.ToUpper(method), target, nil)
			_, pattern := f.h.mux.Handler(req)
			require.Equal(t, strings.ToUpper(method)+" "+path, pattern, "%s %s must reach its route", method, path)
		}
	}
	// Every route is served by exactly its documented pattern.
	for _, rt := range routes {
		require.Contains(t, doc.Paths, rt.path)
		require.Contains(t, doc.Paths[rt.path], strings.ToLower(rt.method))
	}
}
