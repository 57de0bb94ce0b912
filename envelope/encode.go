package envelope

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Encode validates e and writes it in the native format: key
// "bizID:messageKey", the payload as value (empty for commit and rollback)
// and ec-* headers. Empty optional fields are left out. e.Format is ignored.
// The record's Topic, Partition and Offset are left zero for the caller.
//
// For every valid e, Decode(Encode(e)) returns e with Format Native (and
// empty byte slices as nil). Encode does not limit the payload size; the
// decoder (Decoder.MaxPayload) and the broker do. Errors match ErrInvalid.
//
// The record's Value and forwarded header values share memory with e.
func Encode(e Envelope) (Record, error) {
	if p := validate(&e); p != nil {
		return Record{}, encodeError("encode envelope", p)
	}
	var checkAfter [20]byte
	ca := checkAfter[:0]
	if e.CheckAfter != 0 {
		ca = strconv.AppendInt(ca, int64(e.CheckAfter/time.Millisecond), 10)
	}
	var deliverAt, delay [20]byte
	da, dl := deliverAt[:0], delay[:0]
	if !e.DeliverAt.IsZero() {
		da = strconv.AppendInt(da, e.DeliverAt.UnixMilli(), 10)
	}
	if e.Delay != 0 {
		dl = strconv.AppendInt(dl, int64(e.Delay/time.Millisecond), 10)
	}
	typ := e.Type.String()

	// One buffer holds the key and every ec-* header value.
	n := len(e.BizID) + 1 + len(e.MessageKey) + len(typ) + len(e.BizID) + len(e.MessageKey)
	nh := 3
	if e.Type == Prepare {
		nh += 1 + len(e.Headers)
		for _, l := range [...]int{len(e.ForwardTopic), len(e.ForwardKey), len(e.Target), len(e.Tag), len(e.Verify), len(e.OrderKey), len(ca), len(da), len(dl)} {
			if l != 0 {
				n += l
				nh++
			}
		}
	}
	buf := make([]byte, 0, n)
	take := func(s string) []byte {
		start := len(buf)
		buf = append(buf, s...)
		return buf[start:len(buf):len(buf)]
	}
	buf = append(append(append(buf, e.BizID...), ':'), e.MessageKey...)
	r := Record{Key: buf[:len(buf):len(buf)]}
	hs := make([]Header, 0, nh)
	hs = append(hs,
		Header{Key: HeaderType, Value: take(typ)},
		Header{Key: HeaderBiz, Value: take(e.BizID)},
		Header{Key: HeaderKey, Value: take(e.MessageKey)},
	)
	if e.Type == Prepare {
		hs = append(hs, Header{Key: HeaderTopic, Value: take(e.ForwardTopic)})
		add := func(k, v string) {
			if v != "" {
				hs = append(hs, Header{Key: k, Value: take(v)})
			}
		}
		add(HeaderForwardKey, e.ForwardKey)
		add(HeaderTarget, e.Target)
		add(HeaderTag, e.Tag)
		add(HeaderVerify, e.Verify)
		add(HeaderOrderKey, e.OrderKey)
		if len(ca) != 0 {
			start := len(buf)
			buf = append(buf, ca...)
			hs = append(hs, Header{Key: HeaderCheckAfter, Value: buf[start:len(buf):len(buf)]})
		}
		for _, h := range [...]struct {
			k string
			v []byte
		}{{HeaderDeliverAt, da}, {HeaderDelay, dl}} {
			if len(h.v) != 0 {
				start := len(buf)
				buf = append(buf, h.v...)
				hs = append(hs, Header{Key: h.k, Value: buf[start:len(buf):len(buf)]})
			}
		}
		if len(e.Headers) > 0 {
			// One string holds every "ec-h-<name>".
			var names strings.Builder
			size := 0
			for _, h := range e.Headers {
				size += len(HeaderForwardPrefix) + len(h.Key)
			}
			names.Grow(size)
			for _, h := range e.Headers {
				names.WriteString(HeaderForwardPrefix)
				names.WriteString(h.Key)
			}
			all := names.String()
			for _, h := range e.Headers {
				k := len(HeaderForwardPrefix) + len(h.Key)
				hs = append(hs, Header{Key: all[:k], Value: h.Value})
				all = all[k:]
			}
		}
		r.Value = e.Payload
	}
	r.Headers = hs
	return r, nil
}

// encodeError turns a validation problem into an error matching ErrInvalid
// and the problem's own sentinel.
func encodeError(what string, p *problem) error {
	if errors.Is(p.err, ErrInvalid) {
		return fmt.Errorf("%s: %s: %s: %w", what, p.field, p.reason, p.err)
	}
	return fmt.Errorf("%s: %s: %s: %w (%w)", what, p.field, p.reason, p.err, ErrInvalid)
}
