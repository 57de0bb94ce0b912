package deploycheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Paths of the files this package reads, relative to the repository root.
const (
	AlertsFile    = "deploy/prometheus/alerts.yaml"
	DashboardsDir = "deploy/grafana"
	ComposeConfig = "deploy/compose/eventcenter.yaml"
	// ComposeMySQLConfig is the compose center configuration of the
	// "mysql" profile (deploy/compose/mysql.yaml).
	ComposeMySQLConfig = "deploy/compose/eventcenter-mysql.yaml"
	K8sConfigMapFile   = "deploy/k8s/configmap.yaml"
	// K8sConfigMapKey is the ConfigMap data key holding the center's file.
	K8sConfigMapKey = "eventcenter.yaml"
)

// metricRE matches a metric name of ours or of the Go/process collectors.
// It is applied to PromQL with its string literals removed, and only where
// the preceding character cannot be part of an identifier.
var metricRE = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:$])((?:eventcenter|go|process)_[a-zA-Z0-9_]*[a-zA-Z0-9])`)

// stringRE matches PromQL string literals ("…", '…', `…`).
var stringRE = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")

// histogramSuffixes are the series suffixes of a histogram (or summary)
// family; /metrics lists the family under its base name.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// MetricNames returns the sorted, de-duplicated metric family names used
// by the alert rules (deploy/prometheus/alerts.yaml, their expr fields) and
// the Grafana dashboards (deploy/grafana/**/*.json, every expr, query and
// definition string). Names are those of the center (eventcenter_*) and of
// the Go and process collectors (go_*, process_*); series suffixes of
// histograms (_bucket, _sum, _count) are removed, so each name is a family
// as listed on /metrics.
func MetricNames(repoRoot string) ([]string, error) {
	exprs, err := AlertExprs(repoRoot)
	if err != nil {
		return nil, err
	}
	dash, err := DashboardExprs(repoRoot)
	if err != nil {
		return nil, err
	}
	exprs = append(exprs, dash...)
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, n := range ExprMetricNames(e) {
			seen[n] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// ExprMetricNames returns the metric family names in one PromQL expression
// (or Grafana query such as label_values(metric, label)), in order of first
// appearance, with histogram suffixes removed.
func ExprMetricNames(expr string) []string {
	expr = stringRE.ReplaceAllString(expr, `""`)
	var out []string
	for _, m := range metricRE.FindAllStringSubmatch(expr, -1) {
		n := FamilyName(m[1])
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// FamilyName strips a histogram series suffix (_bucket, _sum, _count).
func FamilyName(series string) string {
	for _, s := range histogramSuffixes {
		if base, ok := strings.CutSuffix(series, s); ok && base != "" {
			return base
		}
	}
	return series
}

// RuleFile is the shape of a Prometheus rule file, as much as we read.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is one alerting or recording rule.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// LoadRules parses the alert rule file.
func LoadRules(repoRoot string) (RuleFile, error) {
	var rf RuleFile
	p := filepath.Join(repoRoot, AlertsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return rf, fmt.Errorf("read alert rules: %w", err)
	}
	if err := yaml.Unmarshal(data, &rf); err != nil {
		return rf, fmt.Errorf("parse alert rules %s: %w", p, err)
	}
	return rf, nil
}

// AlertExprs returns every rule expression of the alert rule file.
func AlertExprs(repoRoot string) ([]string, error) {
	rf, err := LoadRules(repoRoot)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if strings.TrimSpace(r.Expr) == "" {
				return nil, fmt.Errorf("alert rules: group %q rule %q%q has no expr", g.Name, r.Alert, r.Record)
			}
			out = append(out, r.Expr)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("alert rules: no rules found")
	}
	return out, nil
}

// queryKeys are the dashboard JSON keys whose string values are queries.
var queryKeys = map[string]bool{"expr": true, "query": true, "definition": true}

// DashboardExprs returns every query string in the Grafana dashboards
// (deploy/grafana/**/*.json): the values of "expr", "query" and
// "definition" keys at any depth.
func DashboardExprs(repoRoot string) ([]string, error) {
	var out []string
	root := filepath.Join(repoRoot, DashboardsDir)
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(p) != ".json" {
			return nil
		}
		files++
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read dashboard: %w", err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("parse dashboard %s: %w", p, err)
		}
		collectQueries(v, "", &out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk dashboards: %w", err)
	}
	if files == 0 {
		return nil, fmt.Errorf("no dashboard JSON under %s", root)
	}
	return out, nil
}

func collectQueries(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			collectQueries(e, k, out)
		}
	case []any:
		for _, e := range x {
			collectQueries(e, key, out)
		}
	case string:
		if queryKeys[key] && x != "" {
			*out = append(*out, x)
		}
	}
}
