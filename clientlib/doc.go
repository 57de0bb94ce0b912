// Package clientlib is what a producer imports to send reliable messages
// through eventcenter, and what its consumers import to drop duplicates.
//
// A producer sends PREPARE, runs its local transaction, then COMMIT or
// ROLLBACK, all to the center's control topic keyed by "bizID:messageKey":
//
//	p, err := clientlib.NewProducer(clientlib.WithBrokers("kafka:9092"))
//	...
//	err = p.Transact(ctx, clientlib.Message{BizID: "order", Key: id, ...},
//		func(ctx context.Context) error { return saveOrder(ctx, tx) })
//
// If the producer dies between its local commit and the COMMIT envelope, the
// center asks it back: serve NewCheckbackHandler (HTTP, Dubbo Triple JSON and
// JSON-RPC) at the endpoint given in Message.Verify or WithDefaultVerify.
//
// An authenticated, encrypted cluster takes WithTLS and WithSASL (franz-go
// mechanisms), or WithKafkaAuth with the center's own kafkaauth.Config (CA,
// client certificate, SASL PLAIN / SCRAM / OAUTHBEARER, secrets in files
// re-read at each connection); Ping checks the connection at start-up.
//
// Forwarded messages carry the header ec-id = "bizID:messageKey"; a consumer
// drops redeliveries with a Deduper (in memory), or gets exactly-once
// effects with the inbox of package clientlib/inbox, which records the id
// in the consumer's own database transaction.
//
// Tracing: Prepare sends the W3C trace context of its context's
// OpenTelemetry span as the forwarded headers traceparent and tracestate;
// the center's spans and the consumer's continue the producer's trace.
//
// clientlib is its own Go module, github.com/eventcenter/eventcenter/clientlib,
// whose only dependencies are franz-go and the OpenTelemetry API (otel and
// otel/trace, no SDK): no database driver, no RocketMQ client, nothing of
// the center. The module also holds the two packages producer
// and center share: envelope (the control-record wire format) and checkback
// (the check-back protocol: endpoint grammar, Decision, answer encoding and
// strict decoding, the EC-Signature HMAC), and kafkaauth (TLS and SASL
// options). The center's module imports them from here.
package clientlib
