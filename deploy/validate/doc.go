// Package validate checks the deployment files under deploy/ without a
// network or a container engine: the compose file loads through the
// Compose specification's own loader (schema-validated), every Kubernetes
// manifest decodes strictly into the Kubernetes API types (unknown fields
// fail), the Dockerfile builds with the shared build script, and the
// Prometheus rule and dashboard queries parse as PromQL.
//
// It is a separate Go module so that the main module does not carry the
// Kubernetes and Compose libraries. Run it with
//
//	cd deploy/validate && go test ./...
//
// (ci/deploy.sh does, together with promtool check rules).
package validate
