// Package kafka is a forwarder.Target that produces forwarded messages to
// Kafka with franz-go: acks from all in-sync replicas, the idempotent
// producer, a short linger. Errors are classified: what a retry can fix
// (retriable broker errors, timeouts, network trouble) is returned as is; what
// it cannot (a topic that does not exist after a few metadata refreshes, a
// record that is too large, an invalid topic name, missing authorization) is
// wrapped with forwarder.Permanent so the message goes DEAD at once with a
// reason naming the topic.
package kafka
