package producerapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3 description of the routes; a test
// checks it against them (every route and every status it answers).
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3 document of the producer API.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

func (h *Handler) openapi(w http.ResponseWriter, _ *http.Request) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(h.docs)
	return http.StatusOK
}
