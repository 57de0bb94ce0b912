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
