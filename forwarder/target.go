package forwarder

import (
	"context"
	"errors"

	"github.com/eventcenter/eventcenter/envelope"
)

// Record is one message to forward, built from a committed row.
type Record struct {
	// ID is "bizID:messageKey"; sent as the ec-id header (Kafka) or as a key
	// and the ec-id property (RocketMQ) so consumers can drop duplicates.
	ID    string
	Topic string
	// Key is the forward key (Kafka record key, RocketMQ key).
	Key string
	// Tag is the RocketMQ tag; Kafka targets ignore it.
	Tag     string
	Value   []byte
	Headers []envelope.Header
}

// Result is the outcome of sending one record.
type Result struct {
	// Ref is the broker's reference (Kafka "topic/partition@offset",
	// RocketMQ message id).
	Ref string
	// Err is nil on success. Wrap with Permanent when retrying cannot help.
	Err error
}

// Target is a named forward destination. Implementations: forwarder/kafka,
// forwarder/rocketmq.
type Target interface {
	// Send sends the records and returns one result per record, in order.
	// It returns when every record is acknowledged or failed, or ctx ends
	// (then the unfinished ones fail with ctx's error).
	Send(ctx context.Context, recs []Record) []Result
	// Close releases the target's clients.
	Close() error
}

// OrderedTarget is a Target that keeps the order of a forward key's
// records without head-of-line waits: SendInOrder produces the records of
// one forward key (the same Topic and a non-empty Key) one after the other
// without waiting for one's acknowledgement before the next goes out, and
// the target's transport keeps them in that order. A target implements it
// only where the transport guarantees that order across retries
// (forwarder/kafka: the idempotent producer on the key's one partition);
// RocketMQ, and any other target, sends a key's messages head of line.
type OrderedTarget interface {
	Target
	// SendInOrder sends recs as Send does (one result per record, in
	// order) and keeps, for each forward key, this rule: its records are
	// acknowledged in the order of recs, and once one fails, every later
	// one of the key fails too (an error wrapping ErrBehindFailed, never
	// Permanent: it is not the record's fault) and is not written, so none
	// is delivered ahead of an earlier one of its key. Records without a
	// Key are sent as Send does.
	SendInOrder(ctx context.Context, recs []Record) []Result
}

// ErrBehindFailed is the error of a record that SendInOrder did not
// deliver because an earlier record of its forward key failed.
var ErrBehindFailed = errors.New("not sent: an earlier record of its forward key failed")

// permanentError marks an error retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: the message goes DEAD at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent tells whether err (or an error it wraps) was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
