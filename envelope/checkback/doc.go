// Package checkback is the check-back protocol, in one place: how the
// center asks a producer "did this message's local transaction commit?"
// and how the answer is read. The center's verifier (asking), clientlib's
// handler (answering) and envelope validation (accepting an endpoint on
// PREPARE) all use it, so the two sides cannot drift apart.
//
// It holds:
//
//   - the endpoint grammar (ParseEndpoint, CheckEndpoint): http(s):// for the
//     TrustMessage GET shape, tri(s):// for Dubbo Triple JSON,
//     jsonrpc(s):// for JSON-RPC 2.0, zookeeper:// for a Dubbo service
//     found in its registry (ProtoRegistry; Endpoint.Provider builds the
//     direct endpoint of one of its providers); schemes in any case;
//     ?bizid=int|string on tri, jsonrpc and zookeeper endpoints;
//   - Decision, the answer: commit, rollback or unknown;
//   - request encoding (Endpoint.Request) and reading (ParseArgs);
//   - answer encoding (HTTPAnswer, TripleAnswer, JSONRPCAnswer) and strict
//     decoding per protocol (DecodeAnswer): only the exact shape of the
//     endpoint's protocol is read, anything else is unknown, never commit;
//   - the EC-Signature HMAC (Sign, SignWithV1, Verify).
//
// # Answers
//
// The numbers are TrustMessage's messageStatus: 2 commit, 3 rollback,
// 1 unknown (still prepared).
//
//	protocol  accepted answer (2xx)
//	http      Content-Type not checked; a JSON object echoing the key:
//	          {"status":"SUCCESS","data":{"messageKey":"<key>","messageStatus":1|2|3}}
//	          or {"messageKey":"<key>","decision":"commit"|"rollback"|"unknown"}
//	triple    Content-Type application/json; the bare integer 1, 2 or 3
//	jsonrpc   {"jsonrpc":"2.0","id":<the id sent>,"result":1|2|3}
//
// A bare integer on an http endpoint, a decision without the key, the
// TrustMessage object on a Triple endpoint, a JSON-RPC result that is not
// an integer: all unknown, with an error wrapping ErrUnreadable.
//
// # Signature
//
// With a secret for the bizID, the center signs each request (Sign; the
// receiver calls Verify):
//
//	EC-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256(secret, canonical)>
//
// where canonical is eight lines joined by "\n", without a trailing one
// (Signed.Canonical):
//
//	v2
//	<t>
//	<METHOD>                     GET or POST
//	<host>                       the Host header, lower case, ":80"/":443" dropped
//	<request target>             escaped path and raw query as sent
//	<tri-service-version>        "" when absent
//	<tri-service-group>          "" when absent
//	<hex SHA-256 of the body>    of the empty string for GET
//
// No field can hold a newline, so no two requests share a canonical string.
// Verify accepts a timestamp from DefaultMaxAge (5 min) in the past to
// DefaultMaxFuture (30 s) ahead; refusing a replay inside that window is
// the receiver's (clientlib keeps the accepted signatures, keyed by
// Verified.MAC). The legacy v1 entry, HMAC-SHA256 of
// "<t>.<METHOD>.<request target>.<body>", is ambiguous and is sent
// (SignWithV1) and accepted (VerifyOptions.AcceptV1) only when asked for.
//
// The endpoint grammar refuses %2F and %5C in the path and dot segments
// spelled with %2E, so that an endpoint cannot leave the path it shows
// once a server decodes it.
//
// The package imports the standard library only.
package checkback
