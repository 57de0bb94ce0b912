// Package deploycheck reads the deployment files under deploy/ and answers
// questions tests ask about them: which metrics the alert rules and the
// Grafana dashboard use (MetricNames, which the end-to-end test compares
// with a live /metrics page), which center configurations deploy/ ships
// (CenterConfigs) and which EVENTCENTER_* variables it sets (EnvNames).
//
// It has no run-time role; it exists so that the deployment files cannot
// drift from the code: a renamed metric, a removed configuration key or a
// misspelt environment variable fails a test instead of a dashboard or a
// rollout. The metric families the center registers are listed once, in
// deploy/metrics.txt (MetricsFile, LoadFamilies): a test here generates
// it from a running center's registry and fails when it is stale, and the
// checks here and in deploy/validate read it.
package deploycheck
