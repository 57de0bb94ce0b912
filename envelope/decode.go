package envelope

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Record is a control record as read from or written to Kafka, without a
// dependency on any client library.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Decoder decodes control records. The zero value is ready to use.
type Decoder struct {
	// MaxPayload bounds the payload in bytes; 0 means DefaultMaxPayload,
	// a negative value means no limit.
	MaxPayload int
}

// Decode reads and validates one control record. A record with an ec-type
// header is read in the native format; one without is read as TrustMessage's
// MiddlewareMessage JSON. Any failure is a *DecodeError (errors.Is matches
// ErrInvalid, and ErrTooLarge or ErrUnknownType where they apply).
//
// Policy for what is not part of the format: headers that do not start with
// "ec-" and unknown ec-* headers are ignored; a repeated ec-* header is an
// error; on commit and rollback the prepare-only headers and the value are
// ignored (the format says empty, but tools such as kcat cannot send an
// empty value, so "echo commit | kcat ..." must work too); a value over
// MaxPayload is still ErrTooLarge. In the compatibility format the record
// key is not checked (TrustMessage producers chose their own keys), message,
// forwardTopic and verifyInfo are read on prepare only, and unknown JSON
// fields are ignored.
//
// The returned envelope's Payload and header values share memory with r;
// its strings do not. Empty byte slices are returned as nil.
func (d Decoder) Decode(r Record) (Envelope, error) {
	e, p := d.decode(&r)
	if p != nil {
		return Envelope{}, &DecodeError{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Field: p.field, Reason: p.reason, Err: p.err,
		}
	}
	return e, nil
}

func (d Decoder) maxPayload() int {
	switch {
	case d.MaxPayload == 0:
		return DefaultMaxPayload
	case d.MaxPayload < 0:
		return int(^uint(0) >> 1)
	default:
		return d.MaxPayload
	}
}

// native holds the ec-* header values of one record, still as bytes.
type native struct {
	typ, biz, key, topic, fkey, target, tag, verify, checkAfter, order, deliverAt, delay []byte
	seen                                                                                 uint16
	forwarded                                                                            int
}

const (
	seenType = 1 << iota
	seenBiz
	seenKey
	seenTopic
	seenFkey
	seenTarget
	seenTag
	seenVerify
	seenCheckAfter
	seenOrder
	seenDeliverAt
	seenDelay
)

func (n *native) set(name string, bit uint16, dst *[]byte, v []byte) *problem {
	if n.seen&bit != 0 {
		return invalid(name, "header repeated")
	}
	n.seen |= bit
	*dst = v
	return nil
}

func (d Decoder) decode(r *Record) (Envelope, *problem) {
	var n native
	for i := range r.Headers {
		h := &r.Headers[i]
		if !strings.HasPrefix(h.Key, "ec-") {
			continue
		}
		var p *problem
		switch h.Key {
		case HeaderType:
			p = n.set(h.Key, seenType, &n.typ, h.Value)
		case HeaderBiz:
			p = n.set(h.Key, seenBiz, &n.biz, h.Value)
		case HeaderKey:
			p = n.set(h.Key, seenKey, &n.key, h.Value)
		case HeaderTopic:
			p = n.set(h.Key, seenTopic, &n.topic, h.Value)
		case HeaderForwardKey:
			p = n.set(h.Key, seenFkey, &n.fkey, h.Value)
		case HeaderTarget:
			p = n.set(h.Key, seenTarget, &n.target, h.Value)
		case HeaderTag:
			p = n.set(h.Key, seenTag, &n.tag, h.Value)
		case HeaderVerify:
			p = n.set(h.Key, seenVerify, &n.verify, h.Value)
		case HeaderCheckAfter:
			p = n.set(h.Key, seenCheckAfter, &n.checkAfter, h.Value)
		case HeaderOrderKey:
			p = n.set(h.Key, seenOrder, &n.order, h.Value)
		case HeaderDeliverAt:
			p = n.set(h.Key, seenDeliverAt, &n.deliverAt, h.Value)
		case HeaderDelay:
			p = n.set(h.Key, seenDelay, &n.delay, h.Value)
		default:
			if strings.HasPrefix(h.Key, HeaderForwardPrefix) {
				n.forwarded++
			}
		}
		if p != nil {
			return Envelope{}, p
		}
	}
	if n.seen&seenType == 0 {
		return d.decodeCompat(r)
	}
	return d.decodeNative(r, &n)
}

func (d Decoder) decodeNative(r *Record, n *native) (Envelope, *problem) {
	var e Envelope
	e.Format = Native
	switch string(n.typ) {
	case "prepare":
		e.Type = Prepare
	case "commit":
		e.Type = Commit
	case "rollback":
		e.Type = Rollback
	case "cancel":
		e.Type = Cancel
	default:
		return e, &problem{field: HeaderType, reason: "unknown type " + quoteBytes(n.typ) + " (want prepare, commit, rollback or cancel)", err: ErrUnknownType}
	}
	if len(n.biz) == 0 {
		return e, invalid(HeaderBiz, "required")
	}
	if len(n.key) == 0 {
		return e, invalid(HeaderKey, "required")
	}
	// The key must be exactly ec-biz ":" ec-key.
	if len(r.Key) != len(n.biz)+1+len(n.key) || !bytes.HasPrefix(r.Key, n.biz) ||
		r.Key[len(n.biz)] != ':' || !bytes.Equal(r.Key[len(n.biz)+1:], n.key) {
		return e, invalid("key", "%s is not ec-biz:ec-key (%s:%s)", quoteBytes(r.Key), quoteBytes(n.biz), quoteBytes(n.key))
	}
	if len(r.Value) > d.maxPayload() {
		return e, &problem{field: "value", reason: "payload of " + itoa(len(r.Value)) + " bytes exceeds the limit of " + itoa(d.maxPayload()), err: ErrTooLarge}
	}

	if e.Type != Prepare {
		if n.seen&(seenDeliverAt|seenDelay) != 0 {
			return e, invalid("value", "%s carries no payload or routing (only prepare does)", e.Type)
		}
		// One allocation for both strings: the key is "biz:key".
		s := string(r.Key)
		e.BizID, e.MessageKey = s[:len(n.biz)], s[len(n.biz)+1:]
		if p := validate(&e); p != nil {
			return Envelope{}, p
		}
		return e, nil
	}

	if len(n.topic) == 0 {
		return e, invalid(HeaderTopic, "required on prepare")
	}
	if len(n.checkAfter) != 0 {
		ms, ok := parseMillis(n.checkAfter)
		if !ok {
			return e, invalid(HeaderCheckAfter, "%s is not a non-negative integer number of milliseconds", quoteBytes(n.checkAfter))
		}
		e.CheckAfter = time.Duration(ms) * time.Millisecond
	}
	if n.forwarded > MaxHeaders {
		return e, invalid(HeaderForwardPrefix+"*", "%d forwarded headers, at most %d", n.forwarded, MaxHeaders)
	}
	if n.seen&seenDeliverAt != 0 {
		at, ok := ParseDeliverAt(n.deliverAt)
		if !ok {
			return e, invalid(HeaderDeliverAt, "%s is neither an RFC 3339 time nor Unix milliseconds", quoteBytes(n.deliverAt))
		}
		e.DeliverAt = at
	}
	if n.seen&seenDelay != 0 {
		ms, ok := parseMillis(n.delay)
		if !ok {
			return e, invalid(HeaderDelay, "%s is not a non-negative integer number of milliseconds", quoteBytes(n.delay))
		}
		e.Delay = time.Duration(ms) * time.Millisecond
	}
	if n.seen&(seenDeliverAt|seenDelay) == seenDeliverAt|seenDelay {
		return e, invalid(HeaderDelay, "set together with %s (at most one of them)", HeaderDeliverAt)
	}

	// All strings of the envelope share one allocation.
	var b strings.Builder
	b.Grow(len(r.Key) + len(n.topic) + len(n.fkey) + len(n.target) + len(n.tag) + len(n.verify) + len(n.order))
	b.Write(r.Key)
	b.Write(n.topic)
	b.Write(n.fkey)
	b.Write(n.target)
	b.Write(n.tag)
	b.Write(n.verify)
	b.Write(n.order)
	s := b.String()
	cut := func(k int) string {
		v := s[:k]
		s = s[k:]
		return v
	}
	e.BizID = cut(len(n.biz))
	cut(1)
	e.MessageKey = cut(len(n.key))
	e.ForwardTopic = cut(len(n.topic))
	e.ForwardKey = cut(len(n.fkey))
	e.Target = cut(len(n.target))
	e.Tag = cut(len(n.tag))
	e.Verify = cut(len(n.verify))
	e.OrderKey = cut(len(n.order))

	if len(r.Value) != 0 {
		e.Payload = r.Value
	}
	if n.forwarded > 0 {
		e.Headers = make([]Header, 0, n.forwarded)
		for i := range r.Headers {
			h := &r.Headers[i]
			if name, ok := strings.CutPrefix(h.Key, HeaderForwardPrefix); ok {
				v := h.Value
				if len(v) == 0 {
					v = nil
				}
				e.Headers = append(e.Headers, Header{Key: name, Value: v})
			}
		}
	}
	if p := validate(&e); p != nil {
		return Envelope{}, p
	}
	return e, nil
}

// parseMillis parses a non-negative decimal integer of at most 12 digits.
func parseMillis(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// ParseDeliverAt reads an ec-deliver-at value: an RFC 3339 time or a
// number of Unix milliseconds. The result is in UTC; false if b is neither
// or is not a whole number of milliseconds after 1970.
func ParseDeliverAt(b []byte) (time.Time, bool) {
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' && !bytes.ContainsAny(b, "-:T") {
		ms, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil || ms <= 0 {
			return time.Time{}, false
		}
		return time.UnixMilli(ms).UTC(), true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil || t.UnixMilli() <= 0 || t.Nanosecond()%int(time.Millisecond) != 0 {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func itoa(n int) string { return strconv.Itoa(n) }
