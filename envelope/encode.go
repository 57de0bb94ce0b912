package envelope

import (
	"fmt"
	"strconv"
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
func Encode(e Envelope) (Record, error) {
	if p := validate(&e); p != nil {
		return Record{}, encodeError("encode envelope", p)
	}
	n := 3
	if e.Type == Prepare {
		n += 1 + len(e.Headers)
		for _, s := range [...]string{e.ForwardKey, e.Target, e.Tag, e.Verify} {
			if s != "" {
				n++
			}
		}
		if e.CheckAfter != 0 {
			n++
		}
	}
	hs := make([]Header, 0, n)
	hs = append(hs,
		Header{Key: HeaderType, Value: []byte(e.Type.String())},
		Header{Key: HeaderBiz, Value: []byte(e.BizID)},
		Header{Key: HeaderKey, Value: []byte(e.MessageKey)},
	)
	r := Record{Key: []byte(Key(e.BizID, e.MessageKey))}
	if e.Type == Prepare {
		hs = append(hs, Header{Key: HeaderTopic, Value: []byte(e.ForwardTopic)})
		add := func(k, v string) {
			if v != "" {
				hs = append(hs, Header{Key: k, Value: []byte(v)})
			}
		}
		add(HeaderForwardKey, e.ForwardKey)
		add(HeaderTarget, e.Target)
		add(HeaderTag, e.Tag)
		add(HeaderVerify, e.Verify)
		if e.CheckAfter != 0 {
			add(HeaderCheckAfter, strconv.FormatInt(int64(e.CheckAfter/time.Millisecond), 10))
		}
		for _, h := range e.Headers {
			hs = append(hs, Header{Key: HeaderForwardPrefix + h.Key, Value: h.Value})
		}
		r.Value = e.Payload
	}
	r.Headers = hs
	return r, nil
}

// encodeError turns a validation problem into an error matching ErrInvalid
// and the problem's own sentinel.
func encodeError(what string, p *problem) error {
	if p.err == ErrInvalid {
		return fmt.Errorf("%s: %s: %s: %w", what, p.field, p.reason, p.err)
	}
	return fmt.Errorf("%s: %s: %s: %w (%w)", what, p.field, p.reason, p.err, ErrInvalid)
}
