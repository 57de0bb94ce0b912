package envelope

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Header names of the native format.
const (
	// HeaderPrefix starts every header name of the format (and every one
	// the center adds); the decoder ignores headers without it.
	HeaderPrefix     = "ec-"
	HeaderType       = "ec-type"
	HeaderBiz        = "ec-biz"
	HeaderKey        = "ec-key"
	HeaderTopic      = "ec-topic"
	HeaderForwardKey = "ec-fkey"
	HeaderTarget     = "ec-target"
	HeaderTag        = "ec-tag"
	HeaderVerify     = "ec-verify"
	HeaderCheckAfter = "ec-check-after"
	// HeaderOrderKey is the order key of a PREPARE: messages of one bizID
	// with the same order key, target and topic are forwarded in the order
	// their COMMITs were applied (docs/ordering.md).
	HeaderOrderKey = "ec-order-key"
	// HeaderDeliverAt is the time a PREPARE's message is forwarded at the
	// earliest: RFC 3339 or Unix milliseconds (README "Scheduled
	// delivery").
	HeaderDeliverAt = "ec-deliver-at"
	// HeaderDelay is the delay, in milliseconds, after which a PREPARE's
	// message is forwarded at the earliest, counted from when the center
	// reads the PREPARE. At most one of ec-deliver-at and ec-delay.
	HeaderDelay = "ec-delay"
	// HeaderForwardPrefix starts a header copied to the forwarded message
	// under the rest of its name.
	HeaderForwardPrefix = "ec-h-"
	// HeaderID is set by the center on every forwarded message to the
	// message id "bizID:messageKey", for consumers to drop duplicates. It
	// is not part of control records.
	HeaderID = "ec-id"
)

// Limits enforced by Decode and Encode. Lengths are in bytes.
const (
	// DefaultMaxPayload is the payload limit of a zero Decoder (1 MiB,
	// Kafka's default message size).
	DefaultMaxPayload = 1 << 20
	MaxBizIDLen       = 64
	MaxMessageKeyLen  = 255
	// MaxTopicLen is Kafka's topic name limit.
	MaxTopicLen      = 249
	MaxForwardKeyLen = 1024
	MaxOrderKeyLen   = 255
	MaxTargetLen     = 64
	MaxTagLen        = 255
	MaxVerifyLen     = 2048
	// MaxCheckAfter bounds ec-check-after.
	MaxCheckAfter = 7 * 24 * time.Hour
	// MaxDelay bounds ec-delay (the center's forward.max_delay, 90 days
	// by default, bounds both ec-delay and ec-deliver-at at ingest).
	MaxDelay = 366 * 24 * time.Hour
	// MaxHeaders bounds the number of forwarded (ec-h-) headers.
	MaxHeaders        = 64
	MaxHeaderNameLen  = 255
	MaxHeaderValueLen = 16 << 10
)

// Validate reports whether e is a valid envelope: what Encode accepts and
// Decode can return. The payload size is not checked: the limit is the
// decoder's policy (Decoder.MaxPayload) and the broker's.
func (e *Envelope) Validate() error {
	if p := validate(e); p != nil {
		return encodeError("invalid envelope", p)
	}
	return nil
}

// validate checks every field of e. Field names are the native header names.
func validate(e *Envelope) *problem {
	switch e.Type {
	case Prepare, Commit, Rollback, Cancel:
	default:
		return &problem{field: HeaderType, reason: "unknown type " + e.Type.String(), err: ErrUnknownType}
	}
	if p := checkBizID(e.BizID); p != nil {
		return p
	}
	if p := checkText(HeaderKey, e.MessageKey, MaxMessageKeyLen, true); p != nil {
		return p
	}
	if e.Type != Prepare {
		if len(e.Payload) != 0 || e.ForwardTopic != "" || e.ForwardKey != "" || e.Target != "" ||
			e.Tag != "" || e.Verify != "" || e.CheckAfter != 0 || len(e.Headers) != 0 || e.OrderKey != "" ||
			!e.DeliverAt.IsZero() || e.Delay != 0 {
			return invalid("value", "%s carries no payload or routing (only prepare does)", e.Type)
		}
		return nil
	}
	if p := checkTopic(e.ForwardTopic); p != nil {
		return p
	}
	if p := checkText(HeaderForwardKey, e.ForwardKey, MaxForwardKeyLen, false); p != nil {
		return p
	}
	if p := checkText(HeaderOrderKey, e.OrderKey, MaxOrderKeyLen, false); p != nil {
		return p
	}
	if p := checkTarget(e.Target); p != nil {
		return p
	}
	if p := checkText(HeaderTag, e.Tag, MaxTagLen, false); p != nil {
		return p
	}
	if p := checkVerify(HeaderVerify, e.Verify); p != nil {
		return p
	}
	if e.CheckAfter < 0 || e.CheckAfter > MaxCheckAfter {
		return invalid(HeaderCheckAfter, "%v is outside [0, %v]", e.CheckAfter, MaxCheckAfter)
	}
	if e.CheckAfter%time.Millisecond != 0 {
		return invalid(HeaderCheckAfter, "%v is not a whole number of milliseconds", e.CheckAfter)
	}
	if !e.DeliverAt.IsZero() && e.Delay != 0 {
		return invalid(HeaderDelay, "set together with %s (at most one of them)", HeaderDeliverAt)
	}
	if e.Delay < 0 || e.Delay > MaxDelay {
		return invalid(HeaderDelay, "%v is outside [0, %v]", e.Delay, MaxDelay)
	}
	if e.Delay%time.Millisecond != 0 {
		return invalid(HeaderDelay, "%v is not a whole number of milliseconds", e.Delay)
	}
	if !e.DeliverAt.IsZero() && (e.DeliverAt.UnixMilli() <= 0 || e.DeliverAt.Nanosecond()%int(time.Millisecond) != 0) {
		return invalid(HeaderDeliverAt, "%s is not a whole number of milliseconds after 1970", e.DeliverAt.Format(time.RFC3339Nano))
	}
	if len(e.Headers) > MaxHeaders {
		return invalid(HeaderForwardPrefix+"*", "%d forwarded headers, at most %d", len(e.Headers), MaxHeaders)
	}
	for i := range e.Headers {
		if p := checkHeader(&e.Headers[i]); p != nil {
			return p
		}
	}
	return nil
}

func checkBizID(s string) *problem {
	if s == "" {
		return invalid(HeaderBiz, "required")
	}
	if len(s) > MaxBizIDLen {
		return invalid(HeaderBiz, "%d bytes, at most %d", len(s), MaxBizIDLen)
	}
	if strings.IndexByte(s, ':') >= 0 {
		return invalid(HeaderBiz, "%s contains ':'", quote(s))
	}
	if !utf8.ValidString(s) {
		return invalid(HeaderBiz, "%s is not valid UTF-8", quote(s))
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid(HeaderBiz, "%s contains a space or control character", quote(s))
		}
	}
	return nil
}

// checkText accepts valid UTF-8 without control characters (databases and
// query strings carry these values).
func checkText(field, s string, max int, required bool) *problem {
	if s == "" {
		if required {
			return invalid(field, "required")
		}
		return nil
	}
	if len(s) > max {
		return invalid(field, "%d bytes, at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "%s is not valid UTF-8", quote(s))
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid(field, "%s contains a control character", quote(s))
		}
	}
	return nil
}

// checkTopic accepts Kafka and RocketMQ topic names: letters, digits and
// . _ - (Kafka), % | (RocketMQ).
func checkTopic(s string) *problem {
	if s == "" {
		return invalid(HeaderTopic, "required on prepare")
	}
	if len(s) > MaxTopicLen {
		return invalid(HeaderTopic, "%d bytes, at most %d", len(s), MaxTopicLen)
	}
	if s == "." || s == ".." {
		return invalid(HeaderTopic, "%s is not a topic name", quote(s))
	}
	for i := 0; i < len(s); i++ {
		if !topicByte(s[i]) {
			return invalid(HeaderTopic, "%s: only letters, digits and . _ - %% | are allowed", quote(s))
		}
	}
	return nil
}

func topicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '%' || c == '|'
}

// checkTarget accepts configured target names: letters, digits, . _ -.
func checkTarget(s string) *problem {
	if len(s) > MaxTargetLen {
		return invalid(HeaderTarget, "%d bytes, at most %d", len(s), MaxTargetLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !topicByte(c) || c == '%' || c == '|' {
			return invalid(HeaderTarget, "%s: only letters, digits and . _ - are allowed", quote(s))
		}
	}
	return nil
}

// checkVerify accepts a check-back endpoint of at most MaxVerifyLen bytes
// in checkback's grammar (checkback.CheckEndpoint), so that whatever ingest
// stores the verifier can call. It does not allocate for a valid endpoint
// (it runs on every PREPARE).
func checkVerify(field, s string) *problem {
	if s == "" {
		return nil
	}
	if len(s) > MaxVerifyLen {
		return invalid(field, "%d bytes, at most %d", len(s), MaxVerifyLen)
	}
	if err := checkback.CheckEndpoint(s); err != nil {
		var ee *checkback.EndpointError
		if errors.As(err, &ee) {
			return invalid(field, "%s: %s", quote(ee.Endpoint), ee.Reason)
		}
		return invalid(field, "%v", err)
	}
	return nil
}

// checkHeader validates a forwarded header (name without the ec-h- prefix).
func checkHeader(h *Header) *problem {
	if h.Key == "" {
		return invalid(HeaderForwardPrefix+"*", "empty header name")
	}
	if p := checkText(HeaderForwardPrefix+"*", h.Key, MaxHeaderNameLen, true); p != nil {
		p.reason = "header name " + p.reason
		return p
	}
	if strings.HasPrefix(h.Key, "ec-") {
		return invalid(HeaderForwardPrefix+h.Key, "forwarded header names starting with ec- are reserved")
	}
	if len(h.Value) > MaxHeaderValueLen {
		return invalid(HeaderForwardPrefix+h.Key, "value of %d bytes, at most %d", len(h.Value), MaxHeaderValueLen)
	}
	return nil
}
