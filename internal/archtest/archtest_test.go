package archtest

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/eventcenter/eventcenter/"

// layers ranks every package of the module (docs/architecture.md, "The
// import rule"): a package imports only packages of a lower layer. A new
// package gets a layer here, where its place is decided, not discovered.
// The clientlib module's packages (envelope, envelope/checkback,
// clientlib, clientlib/kafkarec) are not listed by ./... from here, but imports of
// them are checked against their layer.
var layers = map[string]int{
	// 0: leaves, no project imports.
	"envelope/checkback": 0, "clientlib/inbox": 0, "clientlib/kafkaauth": 0, "store/migrate": 0, "admin/adminapi": 0, "internal/version": 0,
	"internal/cliflags": 0, "internal/shutdown": 0, "internal/startstop": 0, "internal/testclock": 0,
	"internal/lifecycle": 1, "internal/startstop/startstoptest": 1,
	"store/rawlifecycle": 0, "testsupport/rocketmqfake": 0, "testsupport/rocketmqfake/rmqtest": 0, "testsupport/kfaketest": 0,
	"internal/deploycheck": 0, "internal/e2e": 0, "internal/e2e/containers": 0, "internal/archtest": 0,
	// 1-2: the control-record format and the state machine.
	"envelope": 1, "clientlib/kafkarec": 2, "state": 2,
	// 3-5: the store seam, its drivers and their conformance suite.
	"store": 3, "store/internal/codec": 4, "store/storetest": 4, "store/memstore": 5,
	"store/postgres": 5, "store/sqlite": 5, "store/mysql": 5, "store/sharded": 5, "internal/pgtest": 6, "internal/mytest": 6,
	// 6-8: the components. The forwarder is below those that hand it work;
	// tracing wraps the forwarder and store seams for those above it.
	"forwarder": 6, "clientlib": 6,
	"ingest": 8, "verifier": 8, "admin": 8, "forwarder/kafka": 8, "forwarder/rocketmq": 8,
	"internal/retention": 8, "internal/storemetrics": 8, "internal/tracing": 7,
	"admin/client": 8, "admin/cli": 9, "admin/internal/admintest": 9,
	// 10-11: the binary's configuration and its assembly.
	"internal/config": 10, "internal/center": 11,
	// 12-13: tools and commands.
	"internal/bench": 12, "internal/soak": 12, "internal/inboxtest": 12,
	"cmd/eventcenter": 13, "cmd/ectools": 13, "cmd/ecbroker": 13,
	"examples/quickstart": 13, "examples/inboxkafka": 13, "examples/inboxrocketmq": 13, "deploy/compose/example-producer": 13,
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(t.Context(), goBin, "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// Arrows point down: every import of a module package goes to a lower layer.
func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		name, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		from, known := layers[name]
		if !known {
			t.Errorf("%s has no layer: give it one in archtest's table (and docs/architecture.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to, known := layers[dep]
			if known && to >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): arrows must point down", name, from, dep, to)
			}
		}
	}
}

// The product binary links no tooling (bench, soak, the raw-SQL baseline,
// the producer library, the RocketMQ test fake).
func TestProductLinksNoTools(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"cmd/eventcenter" {
			continue
		}
		for _, tool := range []string{"internal/bench", "internal/soak", "store/rawlifecycle", "clientlib", "testsupport/rocketmqfake", "testsupport/kfaketest"} {
			if slices.Contains(p.Deps, module+tool) {
				t.Errorf("the eventcenter binary links %s", tool)
			}
		}
		return
	}
	t.Fatal("cmd/eventcenter not listed")
}
