package clientlib

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientlib has one option style: every exported type named ...Option, in
// clientlib and its packages, is a sealed interface (only unexported
// methods), so options are built only by the packages' With... functions,
// as kgo.Opt is.
func TestOptionsAreSealedInterfaces(t *testing.T) {
	t.Parallel()
	var found []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Option") {
				return true
			}
			pkg := filepath.Base(filepath.Dir(path))
			if pkg == "." {
				pkg = "clientlib"
			}
			name := pkg + "." + ts.Name.Name
			found = append(found, name)
			it, ok := ts.Type.(*ast.InterfaceType)
			if !assertTrue(t, ok, "%s is not an interface", name) {
				return true
			}
			for _, m := range it.Methods.List {
				for _, id := range m.Names {
					assertTrue(t, !id.IsExported(), "%s has exported method %s", name, id.Name)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Subset(t, found, []string{"clientlib.Option", "clientlib.DeduperOption", "clientlib.CheckbackOption", "inbox.Option"})
}

func assertTrue(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}
