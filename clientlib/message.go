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
	// jsonrpc://..., or zookeeper://registry:2181/<interface> for a Dubbo
	// service found in its registry); empty means the producer's WithDefaultVerify, and
	// without that the center's configuration for BizID.
	Verify string
	// CheckAfter delays the first check-back (rounded up to whole
	// milliseconds); 0 means the center's default.
	CheckAfter time.Duration
	// OrderKey, when set, makes the center forward this message after
	// every earlier-committed message of BizID with the same order key,
	// target and topic (ec-order-key; docs/ordering.md). The producer
	// sends the message's envelopes to the control partition of
	// BizID:OrderKey; with Prepare, decide it with CommitOrdered or
	// RollbackOrdered (Transact does). Without a ForwardKey, the center
	// uses the order key as the forward key.
	OrderKey string
	// DeliverAt, when set, makes the center forward the committed message
	// not before this time (ec-deliver-at; rounded up to whole
	// milliseconds). Until then it is SCHEDULED and can be cancelled
	// (Producer.Cancel). It must be after the PREPARE is written and at
	// most the center's forward.max_delay (default 90 days) later, or the
	// center dead-letters the PREPARE. At most one of DeliverAt and Delay.
	DeliverAt time.Time
	// Delay, when set, makes the center forward the committed message not
	// before this long after the PREPARE's record time (ec-delay; rounded
	// up to whole milliseconds).
	Delay time.Duration
}

// ceilMillis rounds d up to whole milliseconds.
func ceilMillis(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r > 0 {
		d += time.Millisecond - r
	}
	return d
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
	checkAfter := ceilMillis(m.CheckAfter)
	deliverAt := m.DeliverAt
	if !deliverAt.IsZero() {
		deliverAt = deliverAt.Truncate(0).UTC()
		if t := deliverAt.Truncate(time.Millisecond); t.Before(deliverAt) {
			deliverAt = t.Add(time.Millisecond)
		}
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
		DeliverAt:    deliverAt,
		Delay:        ceilMillis(m.Delay),
	}
}
