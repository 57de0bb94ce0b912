package validate

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// metricsFile lists the metric families the center registers, one
// "name type" a line; it is generated from a running center's registry
// (app/deploycheck, TestMetricsFileMatchesTheRegistry).
const metricsFile = repoRoot + "/deploy/metrics.txt"

// prometheusOwn are series Prometheus itself adds per target.
var prometheusOwn = []string{"up"}

// exported are the families alerts and dashboards may select: the
// center's (metricsFile) and Prometheus' own.
var exported = loadExported()

func loadExported() []string {
	data, err := os.ReadFile(metricsFile)
	if err != nil {
		panic(fmt.Sprintf("read metric families: %v", err))
	}
	out := slices.Clone(prometheusOwn)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, ok := strings.Cut(line, " ")
		if !ok {
			panic(fmt.Sprintf("%s: want \"name type\", got %q", metricsFile, line))
		}
		out = append(out, name)
	}
	return out
}

func familyOf(series string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(series, s); ok {
			return b
		}
	}
	return series
}

// checkPromQL parses expr and checks every selected metric is exported.
func checkPromQL(t *testing.T, where, expr string) {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	e, err := p.ParseExpr(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	n := 0
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			n++
			require.NotEmpty(t, vs.Name, "%s: select metrics by name: %s", where, expr)
			require.Contains(t, exported, familyOf(vs.Name), "%s: unknown metric in %s", where, expr)
		}
		return nil
	})
	require.Positive(t, n, "%s: no metric selected: %s", where, expr)
}

func TestAlertRulesParse(t *testing.T) {
	t.Parallel()
	var rf struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, filepath.Join(deployDir, "prometheus", "alerts.yaml")), &rf))
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			checkPromQL(t, g.Name+"/"+r.Alert, r.Expr)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 7)
}

// grafanaVars replaces Grafana's template variables with values PromQL
// accepts, so dashboard queries can be parsed.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m",
	"${instance}", ".*", "$instance", ".*",
)

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	n := 0
	err := filepath.WalkDir(filepath.Join(deployDir, "grafana"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		var dash struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Type    string `json:"type"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name  string          `json:"name"`
					Type  string          `json:"type"`
					Query json.RawMessage `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		require.NoError(t, json.Unmarshal(readFile(t, p), &dash), p)
		require.NotEmpty(t, dash.UID, p)
		for _, panel := range dash.Panels {
			if panel.Type == "row" {
				continue
			}
			require.NotEmpty(t, panel.Targets, "%s: panel %q has no query", p, panel.Title)
			for _, tg := range panel.Targets {
				checkPromQL(t, p+": "+panel.Title, grafanaVars.Replace(tg.Expr))
				n++
			}
		}
		for _, v := range dash.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct {
				Query string `json:"query"`
			}
			require.NoError(t, json.Unmarshal(v.Query, &q), "%s: variable %s", p, v.Name)
			m := labelValuesRE.FindStringSubmatch(q.Query)
			require.NotNil(t, m, "%s: variable %s: want label_values(selector, label), got %q", p, v.Name, q.Query)
			checkPromQL(t, p+": variable "+v.Name, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, n, 20)
}

func TestCheckPromQLCatchesMistakes(t *testing.T) {
	t.Parallel()
	p := parser.NewParser(parser.Options{})
	_, err := p.ParseExpr(`sum(rate(eventcenter_forward_total[5m])`)
	require.Error(t, err, "unbalanced parentheses")
	require.NotContains(t, exported, familyOf("eventcenter_forwarded_total"))
	require.True(t, slices.Contains(exported, familyOf("eventcenter_commit_to_sent_seconds_bucket")))
	require.Contains(t, exported, "eventcenter_forward_breaker_open", "read from "+metricsFile)
}
