package deploycheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

const repoRoot = "../.."

func TestMetricNamesAreExported(t *testing.T) {
	t.Parallel()
	names, err := MetricNames(repoRoot)
	require.NoError(t, err)
	require.True(t, slices.IsSorted(names))
	// The families the center exports: MetricsFile, generated from the
	// registry (TestMetricsFileMatchesTheRegistry).
	fams, err := LoadFamilies(repoRoot)
	require.NoError(t, err)
	for _, n := range names {
		require.True(t, slices.ContainsFunc(fams, func(f Family) bool { return f.Name == n }),
			"%s is used in deploy/ but is not a metric the center exports", n)
	}
	// The dashboard shows throughput, latency, backlog, check-backs, DLQ,
	// lag and ownership: most of the families appear.
	for _, n := range []string{
		"eventcenter_envelopes_total", "eventcenter_commit_to_sent_seconds", "eventcenter_forward_total",
		"eventcenter_checkback_total", "eventcenter_dlq_total", "eventcenter_consumer_lag",
		"eventcenter_owned_partitions", "eventcenter_ingest_batch_apply_duration_seconds", "eventcenter_build_info",
	} {
		require.Contains(t, names, n)
	}
}

func TestAlertsCoverTheRequiredConditions(t *testing.T) {
	t.Parallel()
	rf, err := LoadRules(repoRoot)
	require.NoError(t, err)
	byMetric := map[string][]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: only alerting rules here", g.Name)
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s: severity label", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
			require.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
			for _, n := range ExprMetricNames(r.Expr) {
				byMetric[n] = append(byMetric[n], r.Alert)
			}
		}
	}
	for _, n := range []string{
		"eventcenter_unsent_committed_messages", // backlog of unsent committed messages
		"eventcenter_dead_messages",             // DEAD > 0
		"eventcenter_verify_failed_messages",    // VERIFY_FAILED > 0
		"eventcenter_oldest_prepared_age_seconds",
		"eventcenter_oldest_orphan_commit_age_seconds",     // a COMMIT waiting for its PREPARE
		"eventcenter_oldest_blocked_order_key_age_seconds", // an order key held by its head
		"eventcenter_consumer_lag",
		"eventcenter_owned_partitions", // nobody consuming
		"eventcenter_dlq_total",
		"eventcenter_dlq_dropped_total", // bad input that could not be set aside
	} {
		require.NotEmpty(t, byMetric[n], "no alert uses %s", n)
	}
	var noConsumer string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, "absent(eventcenter_owned_partitions)") {
				noConsumer = r.Expr
			}
		}
	}
	require.Contains(t, noConsumer, "sum(eventcenter_owned_partitions) == 0", "the no-consumer alert fires on zero and on absence")
}

func TestExprMetricNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (type) (rate(eventcenter_envelopes_total{instance=~"$instance"}[$__rate_interval]))`, []string{"eventcenter_envelopes_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(eventcenter_commit_to_sent_seconds_bucket[5m])))`, []string{"eventcenter_commit_to_sent_seconds"}},
		{`rate(eventcenter_ingest_batch_size_sum[1m]) / rate(eventcenter_ingest_batch_size_count[1m])`, []string{"eventcenter_ingest_batch_size"}},
		{`label_values(eventcenter_build_info, instance)`, []string{"eventcenter_build_info"}},
		{`sum(eventcenter_owned_partitions) == 0 or absent(eventcenter_owned_partitions)`, []string{"eventcenter_owned_partitions"}},
		// Names inside string literals are label values, not metrics.
		{`up{job="eventcenter_old", x='eventcenter_y', z=` + "`eventcenter_z`" + `}`, nil},
		{`{__name__="eventcenter_forward_total"}`, nil},
		{`go_goroutines + process_resident_memory_bytes`, []string{"go_goroutines", "process_resident_memory_bytes"}},
		// Not metrics: identifiers that merely contain the prefix, Grafana variables.
		{`my_eventcenter_total + $eventcenter_var + foo:eventcenter_x`, nil},
		{`prometheus`, nil},
	} {
		require.Equal(t, tc.want, ExprMetricNames(tc.expr), tc.expr)
	}
}

func TestFamilyName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a_seconds", FamilyName("a_seconds_bucket"))
	require.Equal(t, "a_seconds", FamilyName("a_seconds_sum"))
	require.Equal(t, "a", FamilyName("a_count"))
	require.Equal(t, "a_total", FamilyName("a_total"))
	require.Equal(t, "_count", FamilyName("_count"))
}

// fakeRepo writes files (path → content) under a temporary repository root.
func fakeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(body), 0o644))
	}
	return root
}

const goodRules = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: eventcenter_dead_messages > 0\n"
const goodDash = `{"panels":[{"targets":[{"expr":"rate(eventcenter_forward_total[1m])"}]}],
 "templating":{"list":[{"query":{"query":"label_values(eventcenter_build_info, instance)"}}]}}`

func TestMetricNamesFromFiles(t *testing.T) {
	t.Parallel()
	root := fakeRepo(t, map[string]string{AlertsFile: goodRules, DashboardsDir + "/dashboards/x.json": goodDash})
	names, err := MetricNames(root)
	require.NoError(t, err)
	require.Equal(t, []string{"eventcenter_build_info", "eventcenter_dead_messages", "eventcenter_forward_total"}, names)
}

func TestMetricNamesErrors(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"no alert file":     {DashboardsDir + "/d.json": goodDash},
		"bad alert yaml":    {AlertsFile: "groups: [", DashboardsDir + "/d.json": goodDash},
		"rule without expr": {AlertsFile: "groups:\n- name: g\n  rules:\n  - alert: A\n", DashboardsDir + "/d.json": goodDash},
		"no rules":          {AlertsFile: "groups: []\n", DashboardsDir + "/d.json": goodDash},
		"no dashboards":     {AlertsFile: goodRules, DashboardsDir + "/readme.txt": "x"},
		"bad dashboard":     {AlertsFile: goodRules, DashboardsDir + "/d.json": "{"},
		"no grafana dir":    {AlertsFile: goodRules},
	} {
		root := fakeRepo(t, files)
		_, err := MetricNames(root)
		require.Error(t, err, name)
	}
}

// configEnvNames lists the environment variables app/config reads,
// from the env:"…" tags of config.Config, by reflection.
func configEnvNames() []string {
	var out []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
				out = append(out, name)
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[config.Config]())
	return out
}

func TestDeployConfigKeysAreAccepted(t *testing.T) {
	t.Parallel()
	cfgs, err := CenterConfigs(repoRoot)
	require.NoError(t, err)
	require.Len(t, cfgs, 3)
	for _, c := range cfgs {
		cfg := config.Default()
		require.NoError(t, config.Parse(c.Data, &cfg), c.Source)
		// Stand in for what the deployment provides from secrets.
		if slices.Contains(c.SecretEnv, "EVENTCENTER_STORE_DSN") {
			require.Empty(t, cfg.Store.DSN, "%s: the DSN comes from a secret, not the file", c.Source)
			cfg.Store.DSN = "postgres://eventcenter@db.example:5432/eventcenter"
		}
		for i, tok := range cfg.Ingress.Tokens {
			if tok.TokenFile != "" { // a file from the Secret
				cfg.Ingress.Tokens[i].Token = fmt.Sprintf("producer-token-%02d-from-the-secret", i)
			}
		}
		require.NoError(t, cfg.Validate(), c.Source)
		require.Equal(t, "0.0.0.0:8080", cfg.HTTP.Listen, "%s: containers must listen on all interfaces", c.Source)
		require.False(t, cfg.Store.AutoMigrate, "%s: migrations run as their own step", c.Source)
	}

	known := configEnvNames()
	require.Contains(t, known, "EVENTCENTER_STORE_DSN", "reflection found the env tags")
	require.Contains(t, known, "EVENTCENTER_CHECKBACK_FIRST_DELAY", "reflection walks embedded structs")
	known = append(known, "EVENTCENTER_ADMIN_TOKENS")

	used, err := EnvNames(repoRoot)
	require.NoError(t, err)
	for _, must := range []string{"EVENTCENTER_STORE_DSN", "EVENTCENTER_ADMIN_TOKENS"} {
		require.Contains(t, used, must, "deploy/ sets %s from a secret", must)
	}
	for name, files := range used {
		require.Contains(t, known, name, "%s (named in %v) is not read by app/config", name, files)
	}
}

func TestUnknownConfigKeyIsRejected(t *testing.T) {
	t.Parallel()
	// The check above is only worth something if Parse is strict.
	cfg := config.Default()
	require.Error(t, config.Parse([]byte("http:\n  listen: 0.0.0.0:8080\n  lisen: x\n"), &cfg))
}

func TestConfigMapFileErrors(t *testing.T) {
	t.Parallel()
	root := fakeRepo(t, map[string]string{
		"ok.yaml":     "kind: Namespace\n---\nkind: ConfigMap\ndata:\n  eventcenter.yaml: |\n    log:\n      level: debug\n",
		"nokey.yaml":  "kind: ConfigMap\ndata:\n  other: x\n",
		"nocm.yaml":   "kind: Service\n",
		"broken.yaml": "kind: [",
	})
	data, err := ConfigMapFile(filepath.Join(root, "ok.yaml"), K8sConfigMapKey)
	require.NoError(t, err)
	require.Equal(t, "log:\n  level: debug\n", string(data))
	for _, f := range []string{"nokey.yaml", "nocm.yaml", "broken.yaml", "missing.yaml"} {
		_, err := ConfigMapFile(filepath.Join(root, f), K8sConfigMapKey)
		require.Error(t, err, f)
	}
}

func TestEnvNamesFindsUnknownVariables(t *testing.T) {
	t.Parallel()
	root := fakeRepo(t, map[string]string{
		"deploy/compose/compose.yaml": "environment:\n  EVENTCENTER_STORE_DNS: x\n",
		"deploy/docker/Dockerfile":    "ENV EVENTCENTER_LOG_LEVEL=debug\n",
		"deploy/x/main.go":            "// EVENTCENTER_TEST_ONLY is ignored in Go files\n",
	})
	used, err := EnvNames(root)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{
		"EVENTCENTER_STORE_DNS": {"deploy/compose/compose.yaml"},
		"EVENTCENTER_LOG_LEVEL": {"deploy/docker/Dockerfile"},
	}, used)
	require.NotContains(t, configEnvNames(), "EVENTCENTER_STORE_DNS", "a misspelt variable would fail TestDeployConfigKeysAreAccepted")
}
