package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/eventcenter/eventcenter/"

// repoRoot is the repository's root, from this file's directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// archDoc holds the layer table, under the heading importRule.
const (
	archDoc    = "docs/architecture.md"
	importRule = "## The import rule"
)

// layerTable is the layer of every package of the project, read from the
// table of docs/architecture.md ("The import rule"): a package imports
// only packages of a lower layer. Names are paths below module; a name
// ending in "/*" stands for every package under it not named itself.
type layerTable struct {
	exact    map[string]int
	patterns map[string]int // prefix with its trailing slash → layer
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// parseLayers reads the first table after the heading importRule whose
// header is "| layer | packages |": every row is "| N | `pkg`, ... |";
// every code span in the second cell is a package, the rest is prose.
func parseLayers(doc string) (layerTable, error) {
	lt := layerTable{exact: map[string]int{}, patterns: map[string]int{}}
	_, section, ok := strings.Cut(doc, "\n"+importRule+"\n")
	if !ok {
		return lt, fmt.Errorf("no %q section", importRule)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if !inTable {
			inTable = strings.ReplaceAll(line, " ", "") == "|layer|packages|"
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			return lt, fmt.Errorf("row %q: want two cells", line)
		}
		if strings.Trim(cells[0], " -") == "" {
			continue // the separator row
		}
		layer, err := strconv.Atoi(strings.TrimSpace(cells[0]))
		if err != nil {
			return lt, fmt.Errorf("row %q: layer: %w", line, err)
		}
		names := codeSpanRE.FindAllStringSubmatch(cells[1], -1)
		if len(names) == 0 {
			return lt, fmt.Errorf("row %q: no package", line)
		}
		for _, m := range names {
			name := m[1]
			if prefix, ok := strings.CutSuffix(name, "/*"); ok {
				if _, dup := lt.patterns[prefix+"/"]; dup {
					return lt, fmt.Errorf("%s is listed twice", name)
				}
				lt.patterns[prefix+"/"] = layer
				continue
			}
			if _, dup := lt.exact[name]; dup {
				return lt, fmt.Errorf("%s is listed twice", name)
			}
			lt.exact[name] = layer
		}
	}
	if len(lt.exact) == 0 {
		return lt, fmt.Errorf("no layer table (| layer | packages |) under %q", importRule)
	}
	return lt, nil
}

// layer returns name's layer: its own row, else the longest pattern.
func (lt layerTable) layer(name string) (int, bool) {
	if l, ok := lt.exact[name]; ok {
		return l, true
	}
	best, layer := "", 0
	for prefix, l := range lt.patterns {
		if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
			best, layer = prefix, l
		}
	}
	return layer, best != ""
}

func loadLayers(t *testing.T) layerTable {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), archDoc))
	require.NoError(t, err)
	lt, err := parseLayers(string(data))
	require.NoError(t, err, archDoc)
	return lt
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// modules are the directories of the repository's Go modules that
// go.work ties (deploy/validate, outside it, holds tests only).
var modules = []string{".", "clientlib", "envelope"}

// listPackages lists the packages of every module in modules.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	var pkgs []pkg
	for _, dir := range modules {
		pkgs = append(pkgs, listModule(t, filepath.Join(repoRoot(), dir))...)
	}
	return pkgs
}

func listModule(t *testing.T, dir string) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	cmd := exec.CommandContext(t.Context(), goBin, "list", "-json=ImportPath,Imports,TestImports,XTestImports,Deps", "./...")
	cmd.Dir = dir
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
	require.NotEmpty(t, pkgs, "no package in %s", dir)
	return pkgs
}

// Arrows point down: every package has a layer, and every import of a
// project package goes to a package of a lower layer.
func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	for _, e := range importErrors(loadLayers(t), listPackages(t)) {
		t.Error(e)
	}
}

// projectPackages yields the packages of pkgs that are the project's, by
// name (the path below module).
func projectPackages(pkgs []pkg) iter.Seq2[string, pkg] {
	return func(yield func(string, pkg) bool) {
		for _, p := range pkgs {
			if name, ok := strings.CutPrefix(p.ImportPath, module); ok && !yield(name, p) {
				return
			}
		}
	}
}

// importErrors checks pkgs against lt.
func importErrors(lt layerTable, pkgs []pkg) []string {
	var errs []string
	for name, p := range projectPackages(pkgs) {
		from, known := lt.layer(name)
		if !known {
			errs = append(errs, fmt.Sprintf("%s has no layer: give it one in %s (%q)", name, archDoc, importRule))
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to, known := lt.layer(dep)
			switch {
			case !known:
				errs = append(errs, fmt.Sprintf("%s imports %s, which has no layer in %s", name, dep, archDoc))
			case to >= from:
				errs = append(errs, fmt.Sprintf("%s (layer %d) imports %s (layer %d): arrows must point down", name, from, dep, to))
			}
		}
	}
	return errs
}

// Every package the document names exists (a renamed package leaves no
// stale row behind) in one of the modules.
func TestLayerTableNamesRealPackages(t *testing.T) {
	t.Parallel()
	lt := loadLayers(t)
	listed := map[string]bool{}
	for _, p := range listPackages(t) {
		if name, ok := strings.CutPrefix(p.ImportPath, module); ok {
			listed[name] = true
		}
	}
	for name := range lt.exact {
		require.True(t, listed[name], "%s names %s, which is not a package", archDoc, name)
	}
	for prefix := range lt.patterns {
		require.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(listed)), func(n string) bool { return strings.HasPrefix(n, prefix) }),
			"%s names %s*, which matches no package", archDoc, prefix)
	}
	for _, n := range []string{"clientlib", "clientlib/kafkarec", "envelope", "envelope/checkback"} {
		require.True(t, listed[n], "%s: the clientlib and envelope modules are listed", n)
	}
}

func TestParseLayers(t *testing.T) {
	t.Parallel()
	doc := "# x\n\n" + importRule + "\n\ntext\n\n| layer | packages |\n| --- | --- |\n" +
		"| 2 | `a`, `b/*` (a note) |\n| 1 | `b/c`, `d` |\n| 0 | `e` |\n\nafter\n\n## Next\n\n| layer | packages |\n| 9 | `z` |\n"
	lt, err := parseLayers(doc)
	require.NoError(t, err)
	for name, want := range map[string]int{"a": 2, "b/x": 2, "b/x/y": 2, "b/c": 1, "d": 1, "e": 0} {
		got, ok := lt.layer(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"b", "z", "f"} {
		_, ok := lt.layer(name)
		require.False(t, ok, name)
	}
	for what, bad := range map[string]string{
		"no section":  "| layer | packages |\n| 1 | `a` |\n",
		"no table":    importRule + "\n\nprose only\n",
		"bad layer":   importRule + "\n| layer | packages |\n| x | `a` |\n",
		"no package":  importRule + "\n| layer | packages |\n| 1 | none |\n",
		"duplicate":   importRule + "\n| layer | packages |\n| 1 | `a` |\n| 0 | `a` |\n",
		"three cells": importRule + "\n| layer | packages |\n| 1 | `a` | x |\n",
		"dup pattern": importRule + "\n| layer | packages |\n| 1 | `a/*`, `a/*` |\n",
	} {
		_, err := parseLayers("\n" + bad)
		require.Error(t, err, what)
	}
}

// An import of a package with no layer fails, as does an upward import.
func TestImportErrors(t *testing.T) {
	t.Parallel()
	lt := layerTable{exact: map[string]int{"top": 2, "mid": 1, "low": 0}, patterns: map[string]int{}}
	pkgs := []pkg{
		{ImportPath: module + "top", Imports: []string{module + "mid", "fmt", "example.com/other"}},
		{ImportPath: module + "mid", Imports: []string{module + "nolayer", module + "top"}},
		{ImportPath: module + "low"},
		{ImportPath: module + "stray"},
	}
	require.Equal(t, []string{
		"mid imports nolayer, which has no layer in " + archDoc,
		"mid (layer 1) imports top (layer 2): arrows must point down",
		"stray has no layer: give it one in " + archDoc + ` ("` + importRule + `")`,
	}, importErrors(lt, pkgs))
}

// The product binary links no tooling (bench, soak, the raw-SQL baseline,
// the producer library, the RocketMQ test fake).
func TestProductLinksNoTools(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"cmd/eventcenter" {
			continue
		}
		for _, tool := range []string{"cmd/ectools/internal/bench", "cmd/ectools/internal/soak", "store/rawlifecycle", "clientlib", "testsupport/rocketmqfake", "testsupport/kfaketest"} {
			if slices.Contains(p.Deps, module+tool) {
				t.Errorf("the eventcenter binary links %s", tool)
			}
		}
		return
	}
	t.Fatal("cmd/eventcenter not listed")
}

// leafHome is the folder of the leaf utilities: a package under it imports
// nothing of the project outside it, in its tests neither (no component,
// no part of the wiring), so that nothing below the wiring shares a room
// with it.
const leafHome = "internal/"

// internal/ holds leaf utilities only.
func TestInternalImportsNoComponent(t *testing.T) {
	t.Parallel()
	for _, e := range leafErrors(listPackages(t)) {
		t.Error(e)
	}
}

// leafErrors returns every import, test imports included, of a package
// under leafHome of a project package outside it.
func leafErrors(pkgs []pkg) []string {
	var errs []string
	for name, p := range projectPackages(pkgs) {
		if !strings.HasPrefix(name, leafHome) {
			continue
		}
		seen := map[string]bool{}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || strings.HasPrefix(dep, leafHome) || seen[dep] {
				continue
			}
			seen[dep] = true
			errs = append(errs, fmt.Sprintf("%s imports %s: a package under %s imports no component and no part of the wiring (%s, %q)",
				name, dep, leafHome, archDoc, importRule))
		}
	}
	return errs
}

// A leaf that imports a component, or whose test imports the wiring,
// fails; imports among leaves and of other modules do not.
func TestLeafErrors(t *testing.T) {
	t.Parallel()
	pkgs := []pkg{
		{ImportPath: module + "internal/leaf", Imports: []string{"fmt", module + "internal/other", "example.com/x"}},
		{ImportPath: module + "internal/uses", Imports: []string{module + "store"}, TestImports: []string{module + "store"}},
		{ImportPath: module + "internal/tested", XTestImports: []string{module + "internal/tested", module + "app/center"}},
		{ImportPath: module + "internalish", Imports: []string{module + "store"}},
		{ImportPath: module + "store", Imports: []string{module + "internal/leaf"}},
	}
	require.Equal(t, []string{
		"internal/uses imports store: a package under internal/ imports no component and no part of the wiring (" + archDoc + `, "` + importRule + `")`,
		"internal/tested imports app/center: a package under internal/ imports no component and no part of the wiring (" + archDoc + `, "` + importRule + `")`,
	}, leafErrors(pkgs))
}
