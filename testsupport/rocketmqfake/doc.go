// Package rocketmqfake is a wire-level RocketMQ name server and broker for
// tests, built on the standard library only. The real, unmodified
// github.com/apache/rocketmq-client-go/v2 (v2.1.2) producer and push
// consumer talk to it over TCP with RocketMQ's remoting protocol (JSON
// headers).
//
// What it implements: topic routes (105), heartbeats with the consumer
// client ids of each group (34), single and batch sends (10, 320), pulls
// with long polling (11), consumer offsets per group (14, 15), max offset
// and search by timestamp (30, 29), consumer lists (38), queue locks for
// orderly consumers (41, 42) and send-back (36, accepted and dropped).
// With WithACL, sends must carry the ACL signature of an access key and
// secret key (otherwise 16, NO_PERMISSION).
// Unknown request codes are answered with 3 (REQUEST_CODE_NOT_SUPPORTED).
//
// What it does not: persistence, several brokers, replication, tag filtering
// on the broker (the client filters again anyway), retry or dead-letter
// topics, transactions' check-backs, or pushing NOTIFY_CONSUMER_IDS_CHANGED.
// Consumer ids are forgotten when the connection that sent their heartbeat
// closes, as a real broker does.
//
// Test hygiene with the real client: always give it the name server address
// as an IP literal (NameServerAddr does), a unique instance name per producer
// or consumer (the client keeps a process-global map of clients keyed by
// ip@instance), and call rlog.SetLogLevel("error") to quiet it.
//
// Known behaviour of the client (v2.1.2) that tests meet:
//   - Its push consumer has a data race (SubscriptionData.SubVersion,
//     written by the first rebalance, read by the route refresh 10 ms after
//     start). The fake holds consumer-list answers 100 ms
//     (WithConsumerListDelay) which orders the two; without it the race
//     detector fails about one consumer start in five.
//   - Its orderly consumer (WithConsumerOrder) works against the fake, but
//     races on its process queue (putMessage against takeMessages); the fake
//     cannot help that, so orderly tests belong outside -race runs.
//   - Shutdown does not wait for its goroutines (timers that first sleep
//     10 s, pulls waiting up to 30 s, statistics goroutines): use
//     rmqtest.LeakOptions with goleak.
//   - A request whose connection dies is not failed by the client; it waits
//     for its timeout (3 s for sends, 30 s for pulls). Stop therefore
//     answers held pulls, and pulls that arrive while it stops,
//     SERVICE_NOT_AVAILABLE before it closes connections.
//
// The rmqtest sub-package has a helper that reads a topic back with a real
// push consumer; it lives apart so that this package stays stdlib-only.
package rocketmqfake
