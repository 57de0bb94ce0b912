package clientlib_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/eventcenter/eventcenter/clientlib"
)

// A producer answers the center's check-backs from its own database: here
// order-42 committed, order-43 rolled back, anything else is still running.
func ExampleNewCheckbackHandler() {
	h := clientlib.NewCheckbackHandler(func(ctx context.Context, bizID, key string) (clientlib.Decision, error) {
		switch key {
		case "order-42":
			return clientlib.DecisionCommit, nil
		case "order-43":
			return clientlib.DecisionRollback, nil
		}
		return clientlib.DecisionUnknown, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/", h) // serves http://, tri:// and jsonrpc:// endpoints alike

	show := func(r *http.Request) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	// http://producer:8080/checkback
	show(httptest.NewRequest(http.MethodGet, "/checkback?bizID=1001&messageKey=order-42", nil))
	// tri://producer:8080/com.example.TxChecker/verifyMessage (a numeric bizID comes as a number)
	r := httptest.NewRequest(http.MethodPost, "/com.example.TxChecker/verifyMessage", strings.NewReader(`[1001,"order-43"]`))
	r.Header.Set("Content-Type", "application/json")
	show(r)
	// jsonrpc://producer:8080/com.example.TxChecker
	r = httptest.NewRequest(http.MethodPost, "/com.example.TxChecker",
		strings.NewReader(`{"jsonrpc":"2.0","method":"verifyMessage","params":[1001,"order-44"],"id":7}`))
	r.Header.Set("Content-Type", "application/json")
	show(r)
	// Output:
	// 200 {"status":"SUCCESS","data":{"messageKey":"order-42","messageStatus":2}}
	// 200 3
	// 200 {"jsonrpc":"2.0","id":7,"result":1}
}
