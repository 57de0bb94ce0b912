package envelope

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinels matched with errors.Is. Every validation failure matches
// ErrInvalid; ErrTooLarge and ErrUnknownType say more precisely what was
// wrong and match ErrInvalid as well.
var (
	// ErrInvalid: the record is not a valid control record.
	ErrInvalid = errors.New("invalid control record")
	// ErrTooLarge: the payload is larger than the decoder's MaxPayload.
	ErrTooLarge = errors.New("control record payload too large")
	// ErrUnknownType: ec-type (or messageStatus) names no known envelope type.
	ErrUnknownType = errors.New("unknown envelope type")
)

// DecodeError says which record could not be decoded and why. Field is the
// header name (ec-biz, ec-check-after, ...), "key", "value", or for the
// compatibility format the JSON field (bizID, verifyInfo.url, ...).
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Field     string
	Reason    string
	// Err is the sentinel: ErrInvalid, ErrTooLarge or ErrUnknownType.
	Err error
}

// Error names the field and the record.
func (e *DecodeError) Error() string {
	return "decode control record " + e.Topic + "/" + strconv.FormatInt(int64(e.Partition), 10) +
		"@" + strconv.FormatInt(e.Offset, 10) + ": " + e.Field + ": " + e.Reason
}

// Unwrap returns the sentinel.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes every DecodeError match ErrInvalid, whatever its sentinel.
func (e *DecodeError) Is(target error) bool { return target == ErrInvalid }

// problem is a validation failure before it is tied to a record.
type problem struct {
	field  string
	reason string
	err    error
}

func invalid(field, format string, args ...any) *problem {
	return &problem{field: field, reason: fmt.Sprintf(format, args...), err: ErrInvalid}
}

// quote shows a (possibly hostile) value in an error, shortened.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

func quoteBytes(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
