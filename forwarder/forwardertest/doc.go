// Package forwardertest is the behaviour every forward target shares,
// written once and run by each target's tests against its own broker
// (forwarder/kafka on kfake, forwarder/rocketmq on the RocketMQ stand-in):
// a topic that does not exist, a cancelled or expired send, a record over
// the target's size limit, keys and headers delivered as sent, a broker
// that asks the center to slow down, many records in one Send, and the
// order of one key's records. A target that is a forwarder.OrderedTarget
// also runs SendInOrder's cases: a key's records pipelined and stored in
// order, and a send the broker refuses mid-pipeline failing every later
// record of its keys (its Broker is then a RefusingBroker).
//
// A target's test implements Broker for its broker and calls Run; what
// only one target does (RocketMQ tags and producer groups, Kafka's
// classification of broker error codes) stays in that target's own tests.
package forwardertest
