// Package rocketmq is the forward target for RocketMQ, over the Apache
// rocketmq-client-go/v2 (v2.1.2) producer.
//
// Each record is sent with SendSync as a message with the record's topic,
// body and tag (TAGS), the keys "forwardKey bizID:messageKey" (KEYS, space
// separated as RocketMQ wants), the producer's forwarded headers as user
// properties and the property ec-id = bizID:messageKey, so consumers can
// drop duplicates. The result's Ref is the client's message id (UNIQ_KEY,
// what consumers see as MessageExt.MsgId).
//
// Order: the forward key is also the message's SHARDING_KEY, and the queue
// is chosen by its hash, so one key's messages share a queue (messages
// without a key go to a random queue). Within one Send, records with the
// same key are sent one after the other in order, and once one of them fails
// retryably the rest are not sent; different keys go in parallel, up to
// Config.Concurrency at a time. As everywhere in the forwarder, a retry of
// an earlier failure can still overtake later messages.
//
// Errors are classified: a topic the name server does not know, a broker's
// NO_PERMISSION, MESSAGE_ILLEGAL or TOPIC_NOT_EXIST, an invalid topic name
// and headers that cannot be RocketMQ properties are permanent
// (forwarder.Permanent); timeouts, connection errors, SERVICE_NOT_AVAILABLE,
// SYSTEM_ERROR, SYSTEM_BUSY and anything unknown are retryable. A reply
// with a status other than SEND_OK (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT,
// SLAVE_NOT_AVAILABLE), which the client reports without an error, is a
// retryable failure, never a success: the broker may hold the message
// already, so the retry can duplicate it (at-least-once).
//
// Facts about the client that shape this package:
//   - Name servers must be "ip:port" literals; host names are refused.
//   - The client keeps a process-global map of clients keyed by
//     "ip@instance"; every Target gets its own instance name so several
//     named RocketMQ targets (and tests) can run in one process.
//   - The client waits at most 3 s per attempt and makes 1+Retries attempts
//     inside one SendSync; Config.SendTimeout bounds the whole call.
//   - The client logs through rlog, which is process-global. Importing this
//     package routes rlog into slog (installed at init, before any client
//     can start, because rlog's logger variable is not synchronized): the
//     client's info and debug at slog Debug, warnings at Warn, errors (and
//     fatals, which do not exit) at Error. The logger is the one given to
//     SetClientLogger, else the first Target's, else slog.Default(); all
//     targets in the process share it.
package rocketmq
