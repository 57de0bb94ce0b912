package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wireHome is the one home of the wire constants: the envelope module
// (envelope and envelope/checkback), by directory from the repository root.
const wireHome = "envelope"

// wireLiteralExceptions are literals that look like wire constants but
// are not, by file (from the repository root) and value.
var wireLiteralExceptions = map[string]string{
	// A temporary directory's name prefix for a test PostgreSQL cluster.
	"store/postgres/pgtest/cluster.go": "ec-pgcluster-",
}

// wireLiteral reports whether a string constant spells a wire name that
// has its home in the envelope module: an ec-* header name or prefix, the
// default control topic, the default check-back method.
func wireLiteral(s string) bool {
	return strings.HasPrefix(s, "ec-") || s == "verifyMessage" || s == "eventcenter.control"
}

// wireLiterals returns "file:line: value" for every string literal of a
// non-test Go file under root that wireLiteral matches, outside the home
// and the exceptions; and the exceptions that matched nothing.
func wireLiterals(root string, exceptions map[string]string) (found, unused []string, err error) {
	used := map[string]bool{}
	fset := token.NewFileSet()
	err = walkSource(root, func(rel string) bool { return rel == wireHome }, func(path, rel string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !wireLiteral(v) {
				return true
			}
			if exceptions[rel] == v {
				used[rel] = true
				return true
			}
			found = append(found, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+strconv.Quote(v))
			return true
		})
		return nil
	})
	for file := range exceptions {
		if !used[file] {
			unused = append(unused, file)
		}
	}
	return found, unused, err
}

// TestWireConstantsHaveOneHome: no non-test Go file of the three modules
// spells an ec-* header, "verifyMessage" or "eventcenter.control" outside
// the envelope module; they use its constants (envelope.Header*,
// envelope.DefaultControlTopic, checkback.DefaultMethod).
func TestWireConstantsHaveOneHome(t *testing.T) {
	t.Parallel()
	found, unused, err := wireLiterals(repoRoot(), wireLiteralExceptions)
	require.NoError(t, err)
	require.Empty(t, found, "wire constants spelt outside %s/: use the envelope module's constants", wireHome)
	require.Empty(t, unused, "stale exceptions in wireLiteralExceptions")
}

func TestWireLiteralsFindsThem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, src string) { writeFile(t, root, path, src) }
	write("a/a.go", "package a\n\nconst h = \"ec-id\"\n\nvar m = map[string]int{`verifyMessage`: 1}\n\nfunc f() string { return \"x\" + \"eventcenter.control\" }\n")
	write("a/a_test.go", "package a\n\nconst t = \"ec-id\"\n")
	write("envelope/e.go", "package envelope\n\nconst HeaderID = \"ec-id\"\n")
	write("envelope/checkback/c.go", "package checkback\n\nconst DefaultMethod = \"verifyMessage\"\n")
	write("b/b.go", "package b\n\n// \"ec-id\" in a comment is fine\nconst ok, tmp = \"eventcenter.controlx\", \"ec-tmp-\"\n")
	write("a/testdata/x.go", "package x\n\nconst h = \"ec-id\"\n")
	found, unused, err := wireLiterals(root, map[string]string{"b/b.go": "ec-tmp-", "gone.go": "ec-x"})
	require.NoError(t, err)
	require.Equal(t, []string{`a/a.go:3: "ec-id"`, `a/a.go:5: "verifyMessage"`, `a/a.go:7: "eventcenter.control"`}, found)
	require.Equal(t, []string{"gone.go"}, unused)
}
