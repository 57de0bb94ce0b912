package codec

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/eventcenter/eventcenter/envelope"
)

const headersVersion = 1

// EncodeHeaders encodes headers in order into one blob: a version byte, then
// per header the key length, the key, the value length plus one (0 for a nil
// value) and the value, lengths as uvarints. No headers encode as nil.
func EncodeHeaders(hs []envelope.Header) []byte {
	if len(hs) == 0 {
		return nil
	}
	n := 1
	for _, h := range hs {
		n += 2*binary.MaxVarintLen64 + len(h.Key) + len(h.Value)
	}
	b := make([]byte, 0, n)
	b = append(b, headersVersion)
	for _, h := range hs {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(h.Value))+1)
		b = append(b, h.Value...)
	}
	return b
}

// ErrCorruptHeaders is returned for a blob EncodeHeaders did not write.
var ErrCorruptHeaders = errors.New("corrupt headers blob")

// DecodeHeaders reverses EncodeHeaders; an empty blob decodes as nil.
func DecodeHeaders(b []byte) ([]envelope.Header, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != headersVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorruptHeaders, b[0])
	}
	b = b[1:]
	var hs []envelope.Header
	for len(b) > 0 {
		kl, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < kl {
			return nil, fmt.Errorf("%w: key length", ErrCorruptHeaders)
		}
		b = b[n:]
		key := string(b[:kl])
		b = b[kl:]
		vl, n := binary.Uvarint(b)
		if n <= 0 || (vl > 0 && uint64(len(b)-n) < vl-1) {
			return nil, fmt.Errorf("%w: value length", ErrCorruptHeaders)
		}
		b = b[n:]
		var val []byte
		if vl > 0 {
			val = append([]byte{}, b[:vl-1]...)
			b = b[vl-1:]
		}
		hs = append(hs, envelope.Header{Key: key, Value: val})
	}
	return hs, nil
}

// EncodeCursor makes the opaque List cursor for "rows with an id below id".
func EncodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

// ErrBadCursor is returned for a cursor EncodeCursor did not make.
var ErrBadCursor = errors.New("bad list cursor")

// DecodeCursor reverses EncodeCursor; "" decodes as 0 (first page).
func DecodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 4 || string(b[:3]) != "id:" {
		return 0, fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	id, err := strconv.ParseInt(string(b[3:]), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	return id, nil
}

// LeaseToken returns a random non-zero token for a new claim.
func LeaseToken() int64 {
	for {
		if t := rand.Int64(); t != 0 {
			return t
		}
	}
}
