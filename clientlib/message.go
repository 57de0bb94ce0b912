package clientlib

import (
	"time"

	"github.com/eventcenter/eventcenter/envelope"
)

// Header is a header copied to the forwarded message. Names starting with
// "ec-" are reserved.
type Header = envelope.Header

// Message is a reliable message as the producer describes it.
type Message struct {
	// BizID names the producing business (no ':'); with Key it identifies
	// the message, and the center's configuration decides per BizID which
	// check-back endpoints it may call.
	BizID string
	// Key is the message key, unique within BizID; check-back requests
	// carry it so that the producer can find its local transaction.
	Key string
	// Payload is the business message body, forwarded as is.
	Payload []byte
	// ForwardTopic is the business topic the message is forwarded to
	// (required).
	ForwardTopic string
	// ForwardKey is the key of the forwarded record.
	ForwardKey string
	// Target names a forward target configured in the center; empty means
	// its default.
	Target string
	// Tag is the RocketMQ tag of the forwarded message.
	Tag string
	// Headers are copied to the forwarded message.
	Headers []Header
	// Verify is the check-back endpoint (http://, https://, tri://,
	// jsonrpc://...); empty means the producer's WithDefaultVerify, and
	// without that the center's configuration for BizID.
	Verify string
	// CheckAfter delays the first check-back (rounded up to whole
	// milliseconds); 0 means the center's default.
	CheckAfter time.Duration
	// OrderKey, when set, makes the center forward this message after
	// every earlier-committed message of BizID with the same order key,
	// target and topic (ec-order-key; README "Ordering"). The producer
	// sends the message's envelopes to the control partition of
	// BizID:OrderKey; with Prepare, decide it with CommitOrdered or
	// RollbackOrdered (Transact does). Without a ForwardKey, the center
	// uses the order key as the forward key.
	OrderKey string
}

// ID returns the message id "bizID:key", the control record key and the
// ec-id header of the forwarded message.
func (m *Message) ID() string { return envelope.Key(m.BizID, m.Key) }

// envelope builds the PREPARE envelope of m.
func (m *Message) envelope(defaultVerify string) envelope.Envelope {
	verify := m.Verify
	if verify == "" {
		verify = defaultVerify
	}
	checkAfter := m.CheckAfter
	if r := checkAfter % time.Millisecond; r > 0 {
		checkAfter += time.Millisecond - r
	}
	return envelope.Envelope{
		Type:         envelope.Prepare,
		BizID:        m.BizID,
		MessageKey:   m.Key,
		Payload:      m.Payload,
		ForwardTopic: m.ForwardTopic,
		ForwardKey:   m.ForwardKey,
		Target:       m.Target,
		Tag:          m.Tag,
		Verify:       verify,
		CheckAfter:   checkAfter,
		Headers:      m.Headers,
		OrderKey:     m.OrderKey,
	}
}
