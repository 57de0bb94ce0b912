// Command ecbroker is a small standalone Kafka-protocol broker (franz-go's
// kfake) for soak tests and local clusters: it runs in its own process, so
// killing a center does not kill the broker. An HTTP control endpoint
// injects produce and fetch errors at a given rate:
//
//	ecbroker --port 9092 --topics eventcenter.control,orders --partitions 4 --control 127.0.0.1:9093
//	curl -X POST '127.0.0.1:9093/faults?key=produce&rate=0.5'   # half the produce requests fail
//	curl -X POST '127.0.0.1:9093/faults?key=fetch&rate=0'       # fetches pass again
//	curl 127.0.0.1:9093/faults                                  # {"fetch":0,"produce":0.5}
//
// Injected errors are NOT_LEADER_OR_FOLLOWER (retryable) per partition, so
// clients refresh metadata and retry, as with a real broker's leader move.
// SIGUSR1 toggles produce and fetch errors at rate 1 (a broker outage);
// SIGINT or SIGTERM stops the broker.
package main
