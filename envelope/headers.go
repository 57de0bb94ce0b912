package envelope

import "time"

// The headers the center writes, next to the native format's (validate.go):
// what a forwarded message carries and what a dead letter carries. Every
// package that writes or reads them uses these names and helpers; none
// spells them again.

// Headers the center adds to a dead letter (a control record it set aside
// on the dead-letter topic); replay drops every header with the prefix.
const (
	// HeaderDLQPrefix starts every header the center adds to a dead letter.
	HeaderDLQPrefix = "ec-dlq-"
	// HeaderDLQReason says why the record was set aside.
	HeaderDLQReason = HeaderDLQPrefix + "reason"
	// HeaderDLQTopic, HeaderDLQPartition and HeaderDLQOffset say where the
	// original record is.
	HeaderDLQTopic     = HeaderDLQPrefix + "topic"
	HeaderDLQPartition = HeaderDLQPrefix + "partition"
	HeaderDLQOffset    = HeaderDLQPrefix + "offset"
	// HeaderDLQValueDropped marks a dead letter written without its value
	// (the full copy could not be written) and says why; such a copy
	// cannot be replayed.
	HeaderDLQValueDropped = HeaderDLQPrefix + "value-dropped"
	// HeaderDLQSize is the original record's size in bytes (key, value and
	// headers), on a copy written without its value.
	HeaderDLQSize = HeaderDLQPrefix + "size"
	// HeaderDLQOmitted lists what else such a copy left out: "key" when the
	// key was too long, "headers:N" when N original headers did not fit.
	HeaderDLQOmitted = HeaderDLQPrefix + "omitted"
)

// MessageID appends the id of a forwarded message, "bizID:messageKey" (the
// value of HeaderID), to dst.
func MessageID(dst []byte, bizID, messageKey string) []byte {
	dst = append(dst, bizID...)
	dst = append(dst, ':')
	return append(dst, messageKey...)
}

// ForwardHeaders returns the headers of the message forwarded for a
// committed message: the producer's headers hs (the ec-h- ones, without
// their prefix) in order, except one named HeaderID, then HeaderID = id.
// A producer cannot forge the id consumers drop duplicates by.
func ForwardHeaders(hs []Header, id []byte) []Header {
	out := make([]Header, 0, len(hs)+1)
	for _, h := range hs {
		if h.Key != HeaderID {
			out = append(out, h)
		}
	}
	return append(out, Header{Key: HeaderID, Value: id})
}

// ForwardHeadersSize is the size in bytes (names and values) of
// ForwardHeaders(hs, id) for an id of idLen bytes, without building it.
func ForwardHeadersSize(hs []Header, idLen int) int {
	n := len(HeaderID) + idLen
	for _, h := range hs {
		if h.Key != HeaderID {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
}

// DefaultCheckAfter is the first check-back delay of a PREPARE whose
// envelope names none (no ec-check-after) and whose bizID's configuration
// names none either: ingest schedules the first check-back with it and the
// verifier's Policy defaults to it.
const DefaultCheckAfter = 30 * time.Second
