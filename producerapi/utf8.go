package producerapi

import (
	"errors"
	"io"
	"unicode/utf8"
)

// errNotUTF8 ends reading a body that is not UTF-8.
var errNotUTF8 = errors.New("the body is not UTF-8 (JSON must be)")

// utf8Reader passes r's bytes through and fails with errNotUTF8 at the
// first read that shows they are not UTF-8. JSON must be UTF-8, and
// encoding/json would otherwise turn every invalid byte inside a string
// into U+FFFD, three bytes for one.
type utf8Reader struct {
	r io.Reader
	// carry holds the start of a rune cut by the end of the last read.
	carry [utf8.UTFMax]byte
	n     int
	err   error
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.r.Read(p)
	b := p[:n]
	// Complete the rune cut at the end of the last read.
	for u.n > 0 && len(b) > 0 && !utf8.FullRune(u.carry[:u.n]) {
		u.carry[u.n] = b[0]
		u.n++
		b = b[1:]
	}
	if u.n > 0 && utf8.FullRune(u.carry[:u.n]) {
		if r, size := utf8.DecodeRune(u.carry[:u.n]); r == utf8.RuneError && size <= 1 {
			return u.fail()
		}
		u.n = 0
	}
	if u.n == 0 {
		tail := cutRune(b)
		if !utf8.Valid(b[:len(b)-tail]) {
			return u.fail()
		}
		u.n = copy(u.carry[:], b[len(b)-tail:])
	}
	if errors.Is(err, io.EOF) && u.n > 0 {
		return u.fail()
	}
	return n, err
}

func (u *utf8Reader) fail() (int, error) {
	u.err = errNotUTF8
	return 0, u.err
}

// cutRune is the length of the start of a multi-byte rune that b ends
// with and that needs more bytes (0 when b ends with a whole rune).
func cutRune(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		c := b[len(b)-k]
		switch {
		case c < utf8.RuneSelf:
			return 0
		case utf8.RuneStart(c):
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
