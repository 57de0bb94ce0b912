// Package containers holds end-to-end suites that run eventcenter
// (app/center) against the real servers in containers, started with
// testcontainers-go: PostgreSQL (modules/postgres), Apache Kafka in KRaft
// mode (modules/kafka with the apache/kafka image) and Apache RocketMQ (a
// name server and a broker from the apache/rocketmq image). They repeat the
// scenarios that app/e2e runs against kfake and the RocketMQ stand-in:
// a flow of committed, rolled-back and commit-before-prepare messages,
// check-back over HTTP, and a RocketMQ forward target.
//
// The suites are part of the normal build so that compile and vet check
// them; at run time every test skips, saying why, when no Docker engine
// answers (also under CI=true). See docs/testcontainers.md.
package containers
