// Package envelope is the wire format of control records: the native format
// (key "bizID:messageKey", ec-* headers and the raw payload) and TrustMessage's
// MiddlewareMessage JSON, decoding with validation and encoding.
//
// Decoder.Decode turns a Record into a validated Envelope or a *DecodeError
// naming the field and the record; Encode writes the native format and
// validates the same way, so that Decode(Encode(e)) == e for every valid e.
// The limits (MaxBizIDLen, MaxHeaders, DefaultMaxPayload, ...) are constants
// of this package.
//
// It imports only the standard library and checkback (whose grammar decides
// which ec-verify endpoints are valid, so that ingest accepts exactly the
// endpoints the verifier can call). It lives in the clientlib module so that
// producers (clientlib) and the center share it without pulling each
// other's dependencies.
package envelope
