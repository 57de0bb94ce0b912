// Package producerapi is the producer HTTP API: the transactional flow
// (PREPARE, local transaction, COMMIT or ROLLBACK) for producers without a
// Kafka client. It is no second path through the center: a request is
// validated with the envelope package's decoder (the same limits and error
// texts as a control record), written to the control topic keyed
// "bizID:messageKey" with acks=all, and answered 202 with the record's
// partition and offset only once the broker acknowledged it. Everything
// after that (ingest, check-back, forward) is what Kafka producers get.
//
// Routes (the OpenAPI document openapi.json, served at /v1/openapi.json,
// is the reference):
//
//	POST /v1/messages/{bizID}/{key}/prepare    body = payload
//	POST /v1/messages/{bizID}/{key}/commit
//	POST /v1/messages/{bizID}/{key}/rollback
//	GET  /v1/messages/{bizID}/{key}            the message's state
//	POST /v1/batch                             several envelopes, JSON
//	GET  /v1/openapi.json
//
// A PREPARE's routing is given with the control record's own header names
// (ec-topic, ec-fkey, ec-target, ec-tag, ec-verify, ec-check-after,
// ec-order-key, ec-h-<name>), as HTTP headers or as query parameters; one
// name given twice is refused as a repeated header. A commit or rollback
// takes only ec-order-key, to reach the partition of bizID:orderKey that
// an ordered message's PREPARE went to.
//
// Producer tokens (Authorization: Bearer) are scoped to bizIDs and each has
// a token bucket (golang.org/x/time/rate): a request over it is answered
// 429 with Retry-After. A broker that does not acknowledge within the
// produce timeout gives 503: the producer retries, and a repeated envelope
// is harmless by the state machine.
package producerapi
