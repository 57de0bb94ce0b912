package validate

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// exported are the metric families the center exports (fixed by the team)
// plus the Go/process collector families the dashboard shows.
var exported = []string{
	"eventcenter_envelopes_total", "eventcenter_ingest_batch_apply_duration_seconds", "eventcenter_ingest_batch_size",
	"eventcenter_consumer_lag", "eventcenter_dlq_total", "eventcenter_ingest_store_errors_total",
	"eventcenter_dlq_stripped_total", "eventcenter_dlq_dropped_total",
	"eventcenter_owned_partitions", "eventcenter_conflicts_total", "eventcenter_forward_total", "eventcenter_forward_inline_total",
	"eventcenter_forward_duration_seconds", "eventcenter_commit_to_sent_seconds",
	"eventcenter_forward_handoff_dropped_total", "eventcenter_forward_dead_total", "eventcenter_checkback_total",
	"eventcenter_checkback_duration_seconds", "eventcenter_checkback_circuit_open", "eventcenter_verify_failed_total",
	"eventcenter_checkback_disallowed_total", "eventcenter_messages", "eventcenter_oldest_prepared_age_seconds",
	"eventcenter_dead_messages", "eventcenter_verify_failed_messages", "eventcenter_unsent_committed_messages",
	"eventcenter_retention_purged_total", "eventcenter_build_info",
	"eventcenter_orphan_commits", "eventcenter_oldest_orphan_commit_age_seconds",
	"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes",
	"up", // Prometheus' own per-target series
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
}
