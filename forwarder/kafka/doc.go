// Package kafka is a forwarder.Target that produces forwarded messages to
// Kafka with franz-go: acks from all in-sync replicas, the idempotent
// producer, a short linger. Errors are classified: what a retry can fix
// (retriable broker errors, timeouts, network trouble, errors it does not
// know) is returned as is, wrapped with the topic; what it cannot (a topic
// that does not exist after a few metadata refreshes, a record that is too
// large, an invalid topic name, no authorization for the topic, a policy
// violation) is wrapped with forwarder.Permanent so the message goes DEAD at
// once with a reason naming the topic. A missing cluster permission of the
// center's own credentials stays retryable: it is the setup's fault, not the
// message's, and the forwarder's breaker pauses the target meanwhile.
//
// Records are produced with the forward key as Kafka key (none when empty),
// so Kafka's default partitioner keeps one key on one partition.
//
// The target is a forwarder.OrderedTarget: SendInOrder pipelines a forward
// key's records (produced without waiting for each other's
// acknowledgement) and keeps their order, relying on the idempotent
// producer's per-partition order; a record that fails fails every later
// record of its key, which is never written. What exactly it relies on in
// franz-go is at the top of inorder.go.
package kafka
