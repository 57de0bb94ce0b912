package archtest

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A configuration limit (a bound, a size, a default) has one home: the
// component whose Config it belongs to declares it, and its Validate
// checks it; app/ (the wiring and the binary's configuration) refers to
// it and passes the component's problems on under the settings' names. The
// check reads the source (non-test files of the three modules) and finds
// a limit declared twice in three ways:
//
//   - copied constants: two constants of different packages with the same
//     integer value and a word of their names in common (MaxPayloadBytes,
//     MaxMaxPayload), at least one of them spelt with literals only;
//   - copied literals: an integer spelt with literals only in app/ (at
//     least 1024) whose value is a size or bound constant of another
//     package (64<<10 for ingest.RecordOverhead);
//   - checked twice: app/config compares (<, <=, >, >=) a setting that a
//     component Config field takes (app/ maps it, in a composite literal
//     or a mapping function) and that the component's own validation
//     bounds.
//
// limitExceptions lists what is known and kept, each with its reason (the
// found line without its line number); an exception that matches nothing
// fails too, so the list only shrinks.
var limitExceptions = map[string]string{
	// Different limits that happen to share a value.
	"app/retention.DefaultBatch = producerapi.DefaultMaxBatch":    "rows deleted per statement vs envelopes per producer API batch",
	"app/center/httpserver.go: 64<<10 is ingest.RecordOverhead":   "the admin listener's http.Server.MaxHeaderBytes, not a record size",
	"app/center/httpserver.go: 64<<10 is verifier.maxAnswerBytes": "the admin listener's http.Server.MaxHeaderBytes, not a check-back answer",
	"app/storemetrics.blockedLimit = forwarder.DefaultClaimLimit": "blocked keys one gauge refresh reads vs due messages one forwarder claim takes",
	// Copies not yet removed. franz-go's batch facts: ingest (its dead
	// letters) and forwarder/kafka share a layer, so neither may import
	// the other; their shared home would be clientlib/kafkarec, in the
	// released clientlib module.
	"forwarder/kafka.DefaultBatchBytes = ingest.defaultBatchMax": "franz-go's default ProducerBatchMaxBytes; no shared home below both yet",
	"forwarder/kafka.RecordFraming = ingest.batchFraming":        "a record batch's framing; no shared home below both yet",
	// A lane of kafka.lanes may not be id 0 (the default lane,
	// kafka.control_topic), which ingest's Lane allows; the upper bound is
	// ingest.MaxLane, referred to.
	"app/config/lanes.go: Lane.ID (ingest.Config.Lane) is bounded by ingest's validation": "the lower bound is the settings' own",
}

// limitName matches the names of constants that are limits or defaults.
var limitName = regexp.MustCompile(`^(Default|Max|Min|max|min|default)|Max[A-Z]|Overhead|Framing|Bytes$|Limit`)

// sizeName matches the limits whose value, spelt again, is a copy.
var sizeName = regexp.MustCompile(`Max|Overhead|Framing|Bytes|Payload`)

// commonWords are dropped when names are compared.
var commonWords = map[string]bool{"Default": true, "Max": true, "Min": true, "Bytes": true, "Len": true, "max": true, "min": true, "default": true}

type constDecl struct {
	dir, name, pos string
	value          constant.Value
	literal        bool            // spelt with literals (and time units) only
	duration       bool            // spelt with time's units
	refs           map[string]bool // "dir.Name" of the constants it is made of, at any depth
}

type goFile struct {
	dir, rel string
	file     *ast.File
	imports  map[string]string // name → project dir, or "time"
}

type source struct {
	fset   *token.FileSet
	files  []goFile
	consts map[string]map[string]*ast.ValueSpec // dir → name → spec
	fileOf map[*ast.ValueSpec]goFile
	values map[*ast.ValueSpec]constant.Value
}

// readSource parses the non-test Go files under root.
func readSource(root string) (*source, error) {
	src := &source{fset: token.NewFileSet(), consts: map[string]map[string]*ast.ValueSpec{}, fileOf: map[*ast.ValueSpec]goFile{}, values: map[*ast.ValueSpec]constant.Value{}}
	err := walkSource(root, nil, func(path, rel string) error {
		f, err := parser.ParseFile(src.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		gf := goFile{dir: filepath.ToSlash(filepath.Dir(rel)), rel: rel, file: f, imports: map[string]string{}}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dir, ok := strings.CutPrefix(p, module)
			if !ok && p != "time" {
				continue
			}
			if !ok {
				dir = "time"
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			gf.imports[name] = dir
		}
		src.files = append(src.files, gf)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue // iota's repetition
				}
				if src.consts[gf.dir] == nil {
					src.consts[gf.dir] = map[string]*ast.ValueSpec{}
				}
				for _, n := range vs.Names {
					src.consts[gf.dir][n.Name] = vs
				}
				src.fileOf[vs] = gf
			}
		}
		return nil
	})
	return src, err
}

var timeUnits = map[string]int64{"Nanosecond": 1, "Microsecond": 1e3, "Millisecond": 1e6, "Second": 1e9, "Minute": 60e9, "Hour": 3600e9}

// eval is the value of a constant expression of file f, or nil; literal
// tells whether it names no constant other than time's units.
func (src *source) eval(f goFile, e ast.Expr, seen map[*ast.ValueSpec]bool) (v constant.Value, literal bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT && e.Kind != token.FLOAT {
			return nil, false
		}
		return constant.MakeFromLiteral(e.Value, e.Kind, 0), true
	case *ast.ParenExpr:
		return src.eval(f, e.X, seen)
	case *ast.UnaryExpr:
		x, lit := src.eval(f, e.X, seen)
		if x == nil || (e.Op != token.SUB && e.Op != token.ADD) {
			return nil, false
		}
		return constant.UnaryOp(e.Op, x, 0), lit
	case *ast.BinaryExpr:
		x, litX := src.eval(f, e.X, seen)
		y, litY := src.eval(f, e.Y, seen)
		if x == nil || y == nil {
			return nil, false
		}
		switch e.Op {
		case token.SHL, token.SHR:
			s, ok := constant.Uint64Val(y)
			if !ok {
				return nil, false
			}
			return constant.Shift(x, e.Op, uint(s)), litX && litY
		case token.QUO:
			if x.Kind() == constant.Int && y.Kind() == constant.Int {
				if constant.Sign(y) == 0 {
					return nil, false
				}
				return constant.BinaryOp(x, token.QUO_ASSIGN, y), litX && litY
			}
			return constant.BinaryOp(x, e.Op, y), litX && litY
		case token.ADD, token.SUB, token.MUL, token.REM, token.AND, token.OR, token.XOR:
			return constant.BinaryOp(x, e.Op, y), litX && litY
		}
		return nil, false
	case *ast.Ident:
		return src.constValue(f.dir, e.Name, seen), false
	case *ast.SelectorExpr:
		pkg, ok := e.X.(*ast.Ident)
		if !ok {
			return nil, false
		}
		dir, ok := f.imports[pkg.Name]
		switch {
		case !ok:
			return nil, false
		case dir == "time":
			if n, ok := timeUnits[e.Sel.Name]; ok {
				return constant.MakeInt64(n), true
			}
			return nil, false
		}
		return src.constValue(dir, e.Sel.Name, seen), false
	case *ast.CallExpr: // a conversion: time.Duration(5)
		if len(e.Args) == 1 {
			return src.eval(f, e.Args[0], seen)
		}
	}
	return nil, false
}

func (src *source) constValue(dir, name string, seen map[*ast.ValueSpec]bool) constant.Value {
	vs := src.consts[dir][name]
	if vs == nil || seen[vs] {
		return nil
	}
	if v, ok := src.values[vs]; ok {
		return v
	}
	seen[vs] = true
	defer delete(seen, vs)
	for i, n := range vs.Names {
		if n.Name == name {
			v, _ := src.eval(src.fileOf[vs], vs.Values[i], seen)
			src.values[vs] = v
			return v
		}
	}
	return nil
}

// limits are the integer constants whose names say they are limits.
func (src *source) limits() []constDecl {
	var out []constDecl
	for dir, names := range src.consts {
		for name, vs := range names {
			if !limitName.MatchString(name) {
				continue
			}
			for i, n := range vs.Names {
				if n.Name != name {
					continue
				}
				v, lit := src.eval(src.fileOf[vs], vs.Values[i], map[*ast.ValueSpec]bool{})
				if v == nil || v.Kind() != constant.Int {
					continue
				}
				out = append(out, constDecl{dir: dir, name: name, value: v, literal: lit, pos: src.fset.Position(n.Pos()).String(),
					duration: hasTimeUnit(vs.Values[i]), refs: src.refs(src.fileOf[vs], vs.Values[i], map[string]bool{})})
			}
		}
	}
	slices.SortFunc(out, func(a, b constDecl) int { return strings.Compare(a.dir+"."+a.name, b.dir+"."+b.name) })
	return out
}

// refs adds to into the constants e is made of, at any depth, as "dir.Name".
func (src *source) refs(f goFile, e ast.Expr, into map[string]bool) map[string]bool {
	ast.Inspect(e, func(n ast.Node) bool {
		dir, name := "", ""
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if pkg, ok := n.X.(*ast.Ident); ok && f.imports[pkg.Name] != "" && f.imports[pkg.Name] != "time" {
				dir, name = f.imports[pkg.Name], n.Sel.Name
			}
		case *ast.Ident:
			dir, name = f.dir, n.Name
		}
		vs := src.consts[dir][name]
		if vs == nil || into[dir+"."+name] {
			return true
		}
		into[dir+"."+name] = true
		for i, id := range vs.Names {
			if id.Name == name {
				src.refs(src.fileOf[vs], vs.Values[i], into)
			}
		}
		return false
	})
	return into
}

var camelWord = regexp.MustCompile(`[A-Z]+[a-z0-9]*|[a-z][a-z0-9]*`)

func sharesWord(a, b string) bool {
	words := map[string]bool{}
	for _, w := range camelWord.FindAllString(a, -1) {
		if !commonWords[w] {
			words[w] = true
		}
	}
	for _, w := range camelWord.FindAllString(b, -1) {
		if words[w] {
			return true
		}
	}
	return false
}

// copiedConstants finds two limit constants of different packages with
// the same value and a word in common, one spelt with literals.
func copiedConstants(limits []constDecl) []string {
	var found []string
	for i, a := range limits {
		for _, b := range limits[i+1:] {
			switch {
			case a.dir == b.dir, !a.literal && !b.literal, a.duration || b.duration,
				a.refs[b.dir+"."+b.name], b.refs[a.dir+"."+a.name],
				!constant.Compare(a.value, token.EQL, b.value), !sharesWord(a.name, b.name):
				continue
			}
			found = append(found, fmt.Sprintf("%s.%s = %s.%s", a.dir, a.name, b.dir, b.name))
		}
	}
	return found
}

// copiedLiterals finds integers of at least 1024 spelt with literals only
// in app/ whose value is a size or bound constant of another package.
func (src *source) copiedLiterals(limits []constDecl) []string {
	var found []string
	for _, f := range src.files {
		if !strings.HasPrefix(f.dir, "app/") {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && src.consts[f.dir][vs.Names[0].Name] == vs {
				return false // a constant's own declaration: copiedConstants
			}
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			if _, ok := e.(*ast.Ident); ok {
				return false
			}
			v, lit := src.eval(f, e, map[*ast.ValueSpec]bool{})
			if v == nil || !lit {
				return true
			}
			if v.Kind() != constant.Int || constant.Compare(v, token.LSS, constant.MakeInt64(1024)) || hasTimeUnit(e) {
				return false
			}
			for _, l := range limits {
				if l.dir != f.dir && sizeName.MatchString(l.name) && constant.Compare(v, token.EQL, l.value) {
					found = append(found, fmt.Sprintf("%s: %s is %s.%s", f.rel, exprString(e), l.dir, l.name))
				}
			}
			return false
		})
	}
	slices.Sort(found)
	return slices.Compact(found)
}

// hasTimeUnit tells whether e names one of time's units (a duration).
func hasTimeUnit(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && timeUnits[sel.Sel.Name] != 0 {
				found = true
			}
		}
		return !found
	})
	return found
}

func exprString(e ast.Expr) string {
	var b strings.Builder
	var walk func(ast.Expr)
	walk = func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.BasicLit:
			b.WriteString(e.Value)
		case *ast.ParenExpr:
			b.WriteString("(")
			walk(e.X)
			b.WriteString(")")
		case *ast.UnaryExpr:
			b.WriteString(e.Op.String())
			walk(e.X)
		case *ast.BinaryExpr:
			walk(e.X)
			b.WriteString(e.Op.String())
			walk(e.Y)
		default:
			b.WriteString("…")
		}
	}
	walk(e)
	return b.String()
}

// limitCopies runs the three checks over root.
func limitCopies(root string, exceptions map[string]string) (found, unused []string, err error) {
	src, err := readSource(root)
	if err != nil {
		return nil, nil, err
	}
	limits := src.limits()
	used := map[string]bool{}
	for _, group := range [][]string{copiedConstants(limits), src.copiedLiterals(limits), src.checkedTwice()} {
		for _, s := range group {
			if _, ok := exceptions[s]; ok {
				used[s] = true
				continue
			}
			found = append(found, s)
		}
	}
	for s := range exceptions {
		if !used[s] {
			unused = append(unused, s)
		}
	}
	slices.Sort(unused)
	return found, unused, nil
}

// TestConfigLimitsHaveOneHome: no configuration limit is declared twice
// (see limitExceptions for what is kept and why).
func TestConfigLimitsHaveOneHome(t *testing.T) {
	t.Parallel()
	found, unused, err := limitCopies(repoRoot(), limitExceptions)
	require.NoError(t, err)
	require.Empty(t, found, "a limit declared twice: refer to the component's constant, and let app/config pass on the component's Validate (fieldPaths.report) instead of checking again")
	require.Empty(t, unused, "stale exceptions in limitExceptions")
}

func TestLimitCopiesFindsThem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, src string) { writeFile(t, root, path, src) }
	write("ingest/config.go", `package ingest

const RecordOverhead = 64 << 10

const MaxMaxPayload = 1<<30 - RecordOverhead - 8<<10

type Config struct {
	MaxPayload, Parallelism, Spare int
	Timeout                        int
	Biz                            map[string]Limits
}

type Limits struct {
	Weight, Burst int
	Rate          float64
}

func (l Limits) check(biz string) error {
	switch {
	case l.Weight < 0, l.Burst < 0:
		return nil
	}
	bad := func(string, float64) {}
	bad("Rate", l.Rate)
	return nil
}

func (c *Config) Validate() error {
	if c.MaxPayload < 1 || c.MaxPayload > MaxMaxPayload {
		return nil
	}
	pos := func(string, int) {}
	pos("Parallelism", c.Parallelism)
	for _, f := range []struct{ v int }{{c.Timeout}} {
		_ = f
	}
	return nil
}
`)
	write("app/config/fair.go", `package config

import (
	"github.com/eventcenter/eventcenter/ingest"
)

type Policy struct{ Timeout int }

type Biz struct {
	BizID string
	Policy
	Weight, Burst int
	Rate          float64
	Spare         int
}

type Forward struct{ Biz []Biz }

func (f Forward) limits() map[string]ingest.Limits {
	out := map[string]ingest.Limits{}
	for _, b := range f.Biz {
		out[b.BizID] = ingest.Limits{Weight: b.Weight, Rate: b.Rate, Burst: b.Burst}
	}
	return out
}

func (c *Config) timeouts(ic *ingest.Config) {
	for _, b := range c.Forward.Biz {
		ic.Timeout = b.Timeout
	}
}

func (c *Config) validateFair(bad func(string)) {
	for _, b := range c.Forward.Biz {
		if b.Weight < 0 || b.Spare < 0 || b.Timeout < 0 {
			bad("weight")
		}
		checkShare(b, bad)
	}
}

func checkShare(b Biz, bad func(string)) {
	if b.Rate < 0 || 0 > b.Burst {
		bad("rate")
	}
}
`)
	write("app/config/config.go", `package config

import "github.com/eventcenter/eventcenter/ingest"

type Config struct {
	Ingest  Ingest
	Forward Forward
}

type Ingest struct{ MaxPayloadBytes, Parallelism, Spare int }

const MaxPayloadBytes = 1<<30 - 64<<10 - 8<<10

func (c *Config) validate() {
	in := c.Ingest
	if c.Ingest.MaxPayloadBytes > MaxPayloadBytes || in.Parallelism < 1 || in.Spare < 1 {
		_ = c.Ingest.MaxPayloadBytes + 64<<10
	}
}

func (c *Config) IngestConfig() ingest.Config {
	var ic ingest.Config
	ic.MaxPayload = c.Ingest.MaxPayloadBytes
	ic.Spare = c.Ingest.Spare
	return ic
}
`)
	write("app/center/center.go", `package center

import (
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/ingest"
)

func build(cfg config.Config) ingest.Config {
	return ingest.Config{Parallelism: cfg.Ingest.Parallelism}
}
`)
	write("app/config/config_test.go", "package config\n\nconst MaxPayloadBytes = 1<<30 - 64<<10 - 8<<10\n")
	found, unused, err := limitCopies(root, map[string]string{"gone": "was fixed"})
	require.NoError(t, err)
	require.Equal(t, []string{
		"app/config.MaxPayloadBytes = ingest.MaxMaxPayload",
		"app/config/config.go: 64<<10 is ingest.RecordOverhead",
		"app/config/config.go: Ingest.MaxPayloadBytes (ingest.Config.MaxPayload) is bounded by ingest's validation",
		"app/config/config.go: Ingest.Parallelism (ingest.Config.Parallelism) is bounded by ingest's validation",
		"app/config/fair.go: Biz.Burst (ingest.Limits.Burst) is bounded by ingest's validation",
		"app/config/fair.go: Biz.Rate (ingest.Limits.Rate) is bounded by ingest's validation",
		"app/config/fair.go: Biz.Weight (ingest.Limits.Weight) is bounded by ingest's validation",
		// Timeout is Biz's through the Policy it embeds.
		"app/config/fair.go: Policy.Timeout (ingest.Config.Timeout) is bounded by ingest's validation",
	}, found)
	require.Equal(t, []string{"gone"}, unused)
}

// writeFile writes src to path below root, making its directories.
func writeFile(t *testing.T, root, path, src string) {
	t.Helper()
	full := filepath.Join(root, path)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(src), 0o644))
}

// walkSource calls fn with every non-test Go file under root (path, and
// rel: its slash path from root), past testdata, vendor, node_modules,
// hidden directories and the directories skipDir (if not nil) names.
func walkSource(root string, skipDir func(rel string) bool, fn func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "node_modules" || (strings.HasPrefix(d.Name(), ".") && rel != ".") ||
				(skipDir != nil && skipDir(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		return fn(path, rel)
	})
}
