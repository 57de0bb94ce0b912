package producerapi

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// observed records every (route, status) answered by any test's handler:
// TestMain checks them against the OpenAPI document.
var observed = struct {
	sync.Mutex
	m map[string]map[int]bool
}{m: map[string]map[int]bool{}}

func observe(route string, code int) {
	observed.Lock()
	defer observed.Unlock()
	if observed.m[route] == nil {
		observed.m[route] = map[int]bool{}
	}
	observed.m[route][code] = true
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Only a full run answers every status; a -run subset cannot.
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		if err := checkStatusesDocumented(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: OpenAPI document and handlers disagree:\n"+err.Error())
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkStatusesDocumented: every status a route answered in the tests is
// documented for it, and every documented status was answered by some
// test (so the document promises nothing untested).
func checkStatusesDocumented() error {
	doc, err := documentedStatuses()
	if err != nil {
		return err
	}
	var problems []string
	observed.Lock()
	defer observed.Unlock()
	for _, rt := range routes {
		want := doc[rt.name]
		for code := range observed.m[rt.name] {
			if !want[code] {
				problems = append(problems, fmt.Sprintf("route %s answered %d, which openapi.json does not document", rt.name, code))
			}
		}
		for code := range want {
			if !observed.m[rt.name][code] {
				problems = append(problems, fmt.Sprintf("route %s documents %d, which no test made it answer", rt.name, code))
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// documentedStatuses maps each route name (operationId) to its documented
// statuses, and checks that the document's operations are the routes.
func documentedStatuses() (map[string]map[int]bool, error) {
	var doc openAPIDoc
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	out := map[string]map[int]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			i := slices.IndexFunc(routes, func(r route) bool { return r.path == path && strings.EqualFold(r.method, method) })
			if i < 0 {
				return nil, fmt.Errorf("openapi.json documents %s %s, which is no route", strings.ToUpper(method), path)
			}
			if op.OperationID != routes[i].name {
				return nil, fmt.Errorf("openapi.json: %s %s has operationId %q, want %q", strings.ToUpper(method), path, op.OperationID, routes[i].name)
			}
			codes := map[int]bool{}
			for c := range op.Responses {
				var n int
				if _, err := fmt.Sscanf(c, "%d", &n); err != nil {
					return nil, fmt.Errorf("openapi.json: %s %s: response %q is not a status code", method, path, c)
				}
				codes[n] = true
			}
			out[op.OperationID] = codes
		}
	}
	for _, rt := range routes {
		if _, ok := out[rt.name]; !ok {
			return nil, fmt.Errorf("route %s %s is not in openapi.json", rt.method, rt.path)
		}
	}
	return out, nil
}
