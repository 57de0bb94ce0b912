// Package envelope is the wire format of control records: the native format
// (key "bizID:messageKey", ec-* headers and the raw payload) and TrustMessage's
// MiddlewareMessage JSON, decoding with validation and encoding.
//
// It is a leaf package: it imports no broker client and no store, so producers
// (clientlib) and the center share it without pulling each other's
// dependencies.
package envelope
