// Package center assembles one eventcenter instance from its configuration:
// the store, the forward targets, the forwarder, the verifier, the ingester,
// the retention purge, the store gauges and the HTTP server (admin API,
// console, /metrics, /healthz, /readyz). cmd/eventcenter's serve and dev,
// the end-to-end tests and the load tool all run the center through it.
//
// Start order follows dependencies; Stop runs in reverse, as written in
// (*Center).Stop: stop consuming first (ingest commits what it applied),
// then let the verifier and the forwarder drain, then close the targets,
// the HTTP server and the store.
package center
