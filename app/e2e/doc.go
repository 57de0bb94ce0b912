// Package e2e holds the end-to-end tests: producers through clientlib, the
// control topic on an in-process Kafka-protocol broker (kfake), the center as
// assembled by app/center (or the built binary as a subprocess), SQLite
// or a real PostgreSQL, real HTTP check-back servers, and consumers reading
// the business topics back.
package e2e
