package deploycheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MetricsFile is the list of metric families the center registers, one
// "name type" a line, relative to the repository root. It is generated
// from a running center's registry (TestMetricsFileMatchesTheRegistry;
// regenerate with go test ./app/deploycheck -run MetricsFile -update)
// and read by the deployment checks here and in deploy/validate.
const MetricsFile = "deploy/metrics.txt"

// Family is one metric family: its name and its Prometheus type in lower
// case (counter, gauge, histogram, summary, untyped).
type Family struct {
	Name string
	Type string
}

// ParseFamilies reads the format of MetricsFile: '#' starts a comment
// line, blank lines are skipped, every other line is "name type". Names
// must be sorted and unique.
func ParseFamilies(data []byte) ([]Family, error) {
	var out []Family
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"name type\", got %q", n, line)
		}
		if len(out) > 0 && out[len(out)-1].Name >= f[0] {
			return nil, fmt.Errorf("line %d: %s is not after %s (sorted, unique)", n, f[0], out[len(out)-1].Name)
		}
		out = append(out, Family{Name: f[0], Type: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan metric families: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metric families")
	}
	return out, nil
}

// FormatFamilies is the inverse of ParseFamilies, with the file's header.
func FormatFamilies(fams []Family) []byte {
	var b bytes.Buffer
	b.WriteString("# Metric families a center registers, one \"name type\" a line, sorted.\n")
	b.WriteString("# Generated from a running center's registry; do not edit by hand:\n")
	b.WriteString("#   go test ./app/deploycheck -run MetricsFile -update\n")
	b.WriteString("# Alert rules and dashboards (deploy/) may use only these families.\n")
	fams = slices.Clone(fams)
	slices.SortFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range fams {
		fmt.Fprintf(&b, "%s %s\n", f.Name, f.Type)
	}
	return b.Bytes()
}

// LoadFamilies reads MetricsFile under repoRoot.
func LoadFamilies(repoRoot string) ([]Family, error) {
	p := filepath.Join(repoRoot, MetricsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read metric families: %w", err)
	}
	fams, err := ParseFamilies(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	return fams, nil
}
