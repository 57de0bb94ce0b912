package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Paths from this module's directory.
const (
	repoRoot   = "../.."
	deployDir  = ".."
	composeDir = "../compose"
	k8sDir     = "../k8s"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// yamlDocs splits a multi-document YAML file; empty documents are dropped.
func yamlDocs(data []byte) [][]byte {
	var out [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			out = append(out, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Equal(bytes.TrimRight(line, " \r\n"), []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return out
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(doc, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}

func exists(t *testing.T, path string) {
	t.Helper()
	_, err := os.Stat(path)
	require.NoError(t, err, "%s must exist", filepath.Clean(path))
}
