package envelope

import (
	"fmt"
	"strings"
	"time"
)

// Type is what an envelope asks for. The numbers are TrustMessage's
// messageStatus values, so the compatibility format maps one to one.
type Type uint8

const (
	// Prepare announces a message and carries its payload and routing.
	Prepare Type = 1
	// Commit says the producer's local transaction committed.
	Commit Type = 2
	// Rollback says the producer's local transaction rolled back.
	Rollback Type = 3
	// Cancel asks the center not to forward a message that is not sent
	// yet (typically a scheduled one): it ends CANCELLED. A cancel that
	// comes after the send changes nothing (it is counted). Native format
	// only; it carries no payload or routing.
	Cancel Type = 4
)

// String returns the header spelling of t (prepare, commit, rollback).
func (t Type) String() string {
	switch t {
	case Prepare:
		return "prepare"
	case Commit:
		return "commit"
	case Rollback:
		return "rollback"
	case Cancel:
		return "cancel"
	default:
		return fmt.Sprintf("type(%d)", uint8(t))
	}
}

// Format tells which wire format an envelope was read from.
type Format uint8

const (
	// Native is the key + ec-* headers + raw payload format.
	Native Format = iota
	// Compat is TrustMessage's MiddlewareMessage JSON.
	Compat
)

// Header is one record header. Forwarded headers are kept in order.
type Header struct {
	Key   string
	Value []byte
}

// Envelope is one control record, decoded and validated.
type Envelope struct {
	Type       Type
	BizID      string
	MessageKey string

	// The fields below are carried by PREPARE only.

	// Payload is the business message body, forwarded as is.
	Payload []byte
	// ForwardTopic is the business topic the message is forwarded to.
	ForwardTopic string
	// ForwardKey is the key of the forwarded record (Kafka key, RocketMQ key).
	ForwardKey string
	// Target names a configured forward target; empty means the default.
	Target string
	// Tag is the RocketMQ tag of the forwarded message.
	Tag string
	// Verify is the check-back endpoint (http://, tri://, jsonrpc://...).
	Verify string
	// CheckAfter is the delay before the first check-back; 0 means the
	// configured default.
	CheckAfter time.Duration
	// Headers are copied to the forwarded message (ec-h-<name> → <name>).
	Headers []Header
	// OrderKey, when set, orders the message after every earlier-committed
	// message of its bizID with the same order key, target and topic
	// (ec-order-key; docs/ordering.md). Producers send the control records
	// of such a message to the partition of OrderPartitionKey.
	OrderKey string
	// DeliverAt, when set, is the earliest time the message is forwarded
	// (ec-deliver-at, whole milliseconds; decoded in UTC).
	DeliverAt time.Time
	// Delay, when set, delays the forward by this much after the center
	// reads the PREPARE (ec-delay, whole milliseconds). At most one of
	// DeliverAt and Delay is set.
	Delay time.Duration

	// Format is the wire format the envelope was decoded from.
	Format Format
}

// ID returns the message id "bizID:messageKey", which is also the control
// record key and the ec-id header of forwarded messages.
func (e *Envelope) ID() string { return Key(e.BizID, e.MessageKey) }

// Key joins a bizID and a message key into the control record key.
func Key(bizID, messageKey string) string { return bizID + ":" + messageKey }

// OrderRoutingKey is the key whose partition the control records of a
// message with an order key go to ("bizID:orderKey", hashed as Kafka's
// default partitioner hashes record keys: murmur2), so that one key's
// envelopes are read, and their COMMITs applied, in the order the producer
// sent them. The record key itself stays Key(bizID, messageKey).
func OrderRoutingKey(bizID, orderKey string) string { return bizID + ":" + orderKey }

// SplitKey splits a control record key at its first ':' (bizID has no ':',
// messageKey may have some).
func SplitKey(key string) (bizID, messageKey string, ok bool) {
	bizID, messageKey, ok = strings.Cut(key, ":")
	if !ok || bizID == "" || messageKey == "" {
		return "", "", false
	}
	return bizID, messageKey, true
}
