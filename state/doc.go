// Package state is the message state machine specified in
// docs/state-machine.md: one pure function, Apply, that every path changing
// a message goes through (ingest of control envelopes, check-back answers,
// send results and operator actions). The document's transition table is
// generated from Apply, and a test fails when the two disagree.
//
// Apply does no I/O and reads no clock: the caller passes the time and any
// backoff it computed (jitter included) in the Event. Stores read rows, call
// Apply, and write the rows back, so every store behaves the same.
package state
