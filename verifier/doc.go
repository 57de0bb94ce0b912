// Package verifier checks back with producers: it claims PREPARED messages
// whose check-back is due in the owned control partitions, asks each
// producer's endpoint whether the local transaction committed, and applies
// the answer through the store (the state machine's KindCheck* events).
//
// # Endpoints and protocols
//
// The protocol itself — endpoint grammar, request and answer encoding, the
// strict answer decoder and the EC-Signature HMAC — lives in
// clientlib/checkback, shared with envelope validation and clientlib's
// handler. An endpoint comes from the PREPARE (ec-verify) or from the
// bizID's configuration (BizConfig.Endpoint, always used with
// ForceEndpoint):
//
//	http://host:port/path, https://...        GET path?bizID=..&messageKey=..&attempt=n
//	tri://host:port/<iface>/<method>?version=&group=&bizid=int|string (tris:// for TLS)
//	                                           POST /<iface>/<method>, body [bizID, key]
//	jsonrpc://host:port/<path>?method=verifyMessage&bizid=int|string (jsonrpcs://)
//	                                           POST /<path>, {"jsonrpc":"2.0","method":..,"params":[bizID,key],"id":n}
//
// Triple calls carry the call timeout in milliseconds in
// tri-service-timeout and Triple-Timeout-Ms. A numeric bizID goes out as a
// JSON number unless the endpoint says bizid=string (checkback.BizParam).
//
// Reading answers is fail-closed and strict per protocol
// (checkback.DecodeAnswer): an http endpoint must answer a JSON object
// echoing the messageKey asked for (TrustMessage's
// {"status":"SUCCESS","data":{"messageKey":..,"messageStatus":2}} or
// {"messageKey":..,"decision":"commit"}); a Triple endpoint the integer
// 2 with Content-Type application/json; a JSON-RPC endpoint
// {"jsonrpc":"2.0","id":<the id sent>,"result":2}. Rollback likewise with
// 3 / "rollback"; 1 / "unknown" is a clean unknown. Everything else — a
// non-2xx status, a redirect, a timeout, a body that is cut short or of
// another protocol's shape, a JSON-RPC error — is unknown and counted as
// an error (metric outcome "error"; only some of these count for the
// endpoint's circuit breaker, see Storm control).
//
// # Attempts
//
// An attempt is counted when the store claims the message
// (store.Store.ClaimCheckbacks, state.ClaimCheckback), before the call, so
// a call whose center dies before the answer is written still counts and a
// producer never sees more than MaxAttempts calls for a message. The
// answer applies to that attempt: an unknown one (clean or an error) backs
// off, or parks the message as VERIFY_FAILED at the last attempt. A claim
// that comes back past the limit (the last call was never answered) makes
// no call and parks the message. A claimed message that is not called —
// put off for a busy endpoint or an open circuit, dropped after waiting too
// long for a worker, still waiting when Stop comes — gives its attempt back
// (state.KindCheckDeferred).
//
// # Safety
//
// The verifier calls only what the configuration allows for the message's
// bizID: Config.Allow plus BizConfig.Allow (exact origins such as
// http://10.0.0.1:8080, or URL prefixes such as http://10.0.0.1:8080/cb/,
// matched on scheme, host, port and whole path segments) and the bizID's
// own configured Endpoint. A message whose endpoint is not allowed, does not
// parse, or is missing is parked as VERIFY_FAILED (state.KindCheckParked)
// with the reason in its LastError, counted, and no request is made.
// Redirects are never followed.
//
// # Request signature
//
// When a bizID has a Secret, every request carries (checkback.Sign; the
// receiving side is checkback.Verify)
//
//	EC-Signature: t=<unix seconds>,v2=<hex>
//
// where <hex> is the lowercase hex HMAC-SHA256, keyed with the secret, of
// the canonical string (eight fields joined by "\n", no trailing newline)
//
//	v2
//	<t>
//	<METHOD>
//	<host>
//	<request target>
//	<tri-service-version>
//	<tri-service-group>
//	<lowercase hex SHA-256 of the body>
//
// <METHOD> is GET or POST; <host> is the Host header sent (host:port,
// lower case, a ":80" or ":443" suffix dropped); <request target> is the
// path and query exactly as sent on the request line (for the HTTP shape
// it includes bizID, messageKey and attempt); the Triple headers are empty
// when not sent (HTTP, JSON-RPC, or a tri:// endpoint without version or
// group); the body hash is of the empty string for GET. All three protocols
// are signed by this one path (caller.do). A receiver recomputes it from
// the request it got, compares in constant time, refuses timestamps older
// than 5 minutes or more than 30 seconds ahead, and refuses a signature it
// has accepted before (clientlib's handler does all of this). Several v2=
// entries may appear; one matching is enough (key rotation).
//
// BizConfig.SignV1 adds the legacy v1 entry (",v1=<hex HMAC-SHA256 of
// "<t>.<METHOD>.<request target>.<body>">") for producers whose handler
// reads only v1, during an upgrade; v1 is ambiguous and covers neither the
// host nor the Triple headers, so it is off by default.
//
// # Timing
//
// The first check-back is due FirstDelay after the PREPARE unless the
// envelope says otherwise ((*Config).FirstDelay, used by ingest). After the
// n-th unknown the next is due after min(BackoffCap, BackoffBase·2^(n-1))
// with full (default) or equal jitter. The MaxAttempts-th unknown parks the
// message as VERIFY_FAILED, logs an error with bizID and key, and counts
// eventcenter_verify_failed_total{biz_id}. All of it can be set per bizID.
//
// # Storm control
//
// Calls run on at most Workers goroutines, at most EndpointConcurrency per
// endpoint (host:port). When an endpoint is at its cap, up to EndpointQueue
// claimed messages wait in memory and are taken by the goroutines of its
// calls as they end; no goroutine ever waits for a slot (a queued message
// that waited so long that its lease could run out is given back, due at
// once, for the next claim). Beyond that a message is put off
// (state.KindCheckDeferred, no attempt burned) by at least BusyDelay and at
// most MaxPutOff, the put-offs of one endpoint spaced by its measured call
// time per slot (or by the age of its calls when they hang), so a backlog
// comes back at about the pace the endpoint answers. When every worker is
// busy, claimed messages wait in the claim-ahead buffer (see Loop) and are
// not put off. A hanging or slow producer thus holds only its own slots
// and never delays other endpoints.
//
// Each endpoint has a circuit breaker (internal/breaker, the forwarder's
// too, with the breaker.DistinctKeys rule; its cool-down runs on the wall
// clock). It opens on the endpoint failing, not on what it
// answers for one key: only a call that got no answer in time, a transport
// error (connection refused or reset, DNS, closed before a full answer), or
// HTTP 5xx or 429 is a fault, and it takes faults on BreakerFailures
// distinct message keys in a row (no answer between them) to open it. An
// answer given promptly never counts, however useless (an unreadable or
// wrongly shaped 2xx, a JSON-RPC error, 4xx, a redirect) and ends the run,
// and one key answered 5xx again and again never opens it: bad keys of a
// producer are retried on their own backoff and do not pause its good
// ones. While open, the endpoint's messages are put off by BreakerCoolDown
// (plus up to half of it, random) without a call and without burning an
// attempt; after the cool-down one probe call decides whether it closes.
// The probe goes to a message never called before when there is one: for
// the first half of the cool-down after the circuit became half-open, a
// message that was called before (and failed) is put off again (no attempt
// burned), so keys that keep failing do not keep the circuit open while
// new messages would get answers; after that any message may probe.
//
// # Loop
//
// New builds a Verifier over a Store (ClaimCheckbacks and Apply, the latter
// normally the forwarder's fast path, which leases and hands over the
// messages a commit answer made sendable) and the owned partitions. Start
// returns at once. The
// verifier is a pipeline of three stages, each kept busy while the others
// wait on the database or a producer:
//
//   - Claim ahead. The run goroutine keeps an in-memory buffer of claimed,
//     leased messages (at most ClaimAhead) and starts a call from it
//     whenever a worker is free. When the buffer is at most half full it
//     claims again, on a goroutine of its own so calls keep starting while
//     the claim is a round trip away: up to ClaimLimit due messages with a
//     Lease (at least three times the longest Timeout), and never more than
//     the free workers plus the buffer's free room. So a message is never
//     put off only because every worker is busy, and a claim (on
//     PostgreSQL a mostly fixed cost: with a large backlog it reads and
//     sorts every due row) is amortised over many messages. A buffered
//     message that waited so long that its lease could run out before an
//     answer is written (Lease − 2×Timeout) is given back (due at once,
//     no attempt burned) to the next claim, as one waiting in an
//     endpoint's queue is. Buffered
//     messages do not keep their payload.
//   - Fair share between bizIDs (fair.go, docs/checkback.md). The claim is fair
//     (store.Fair: its limit split between the bizIDs with due
//     check-backs by BizConfig.Weight), the buffer is one queue per bizID
//     served in turn (weighted round robin), one bizID runs at most
//     BizWorkers calls and its weighted share of Workers while others
//     wait, and BizConfig.Rate is a token bucket per bizID. A bizID held
//     back by a limit waits in its queue (put off beyond a second's worth
//     of its rate), spends no attempt, does not count against the
//     buffer's room, and is skipped by the claims while it has enough
//     waiting, so the other bizIDs' check-backs keep coming.
//   - Calls, on a pool of worker goroutines (at most Workers, started as
//     concurrency first needs them, kept until Stop), bounded by Workers
//     and the endpoint caps (Storm control).
//   - Appliers. One goroutine gathers answers into batches; a batch is
//     handed to the first free of Appliers goroutines once it holds
//     ApplyBatch answers or ApplyInterval has passed, and keeps growing
//     while all are busy. Each answer is in exactly one batch and the
//     stores take row locks in id order (PostgreSQL) or have one writer
//     (SQLite), so batches written at once do not conflict. Answers carry the claim's lease token, so an answer for
//     a claim that expired and was taken over is dropped.
//
// After a full claim the loop claims again as soon as the buffer has room;
// otherwise when a worker frees after an endpoint was full, when the owned
// partitions change, and every PollInterval. A batch of answers the store
// refuses (a lost connection, a failover) is written again with backoff
// (50 ms doubling to 2 s, jittered) while the answers' leases last, so a
// short store outage costs no second call; an answer whose lease runs out
// first is given up, counted, and the message is asked again by whoever
// claims it next. A refused write that the store in fact committed is
// harmless written again: the answer applies once, except that a deferral
// gives its attempt back twice (one more call allowed). Stop lets a claim in flight finish (only Stop's context cuts
// it: cut by Stop itself, a claim the store had committed left its
// messages leased for the whole lease), cancels calls in flight (their
// attempt stays counted, as
// the producer may have seen them: they are recorded as unknown and come
// back after their backoff), gives back what is still buffered or in an
// endpoint's queue (due at once, no attempt burned), writes the answers
// already received, through all appliers, and waits for every goroutine.
//
// On this project's 2-core test machine (ectools bench, PostgreSQL,
// 100,000 due check-backs, an endpoint answering commit at once) this took
// the check-back rate from ~2,100/s (one claim at a time, sized on free
// workers, the surplus put off; one Apply at a time) to ~5,900–6,900/s,
// nothing put off; with the machine also busy with other work, ~2,300/s
// to ~4,500/s. The verifier then resolves PREPAREs about as fast as
// ingest stores them, and the two share the database's CPU.
//
// # Metrics
//
//	eventcenter_checkback_total{protocol,outcome}     commit, rollback, unknown, error, deferred, parked
//	                                                  (protocol http, triple, jsonrpc, registry; "none"
//	                                                  for a missing or unreadable endpoint)
//	eventcenter_checkback_duration_seconds{protocol}
//	eventcenter_checkback_circuit_open                endpoints with an open or half-open circuit
//	eventcenter_verify_failed_total{biz_id}           configured bizIDs by name, others as "other"
//	eventcenter_checkback_disallowed_total            parked because the endpoint is not allowed
//	eventcenter_checkback_apply_errors_total          writes of answer batches the store refused
//	eventcenter_checkback_apply_abandoned_total       answers never written (lease ran out, or Stop)
//	eventcenter_checkback_registry_total{registry,outcome}  through a registry; outcome also no_provider
//	eventcenter_checkback_registry_provider_skipped_total{registry}  providers skipped for the next
//
// # Registries
//
// A zookeeper:// endpoint names a Dubbo service in its registry. The
// registry (each of its servers) must be on the bizID's allow list; the
// Resolver (verifier/resolver.ZooKeeper in the center) gives the
// providers, each of which must pass the allow list too, or the message
// is parked with the reason. The providers are called in a weighted
// random order (resolver.Order); one that refuses or does not answer in
// time is skipped for the next within the same attempt, which takes at
// most twice the timeout. No provider: the attempt fails with the
// resolver's reason (service and registry) and backs off.
package verifier
