package producerapi

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// utf8Reader passes valid UTF-8 through unchanged however it is cut into
// reads, and fails on anything else, also a rune cut by the end.
func TestUTF8Reader(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "plain", "é", "€ and 𝄞 and ü", "\xff", "a\xffb", "\xe2\x82", "x\xe2\x82", "\xe2\x28\xa1", "\xc0\xae",
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "ok €\xe2", string(bytes.Repeat([]byte("𝄞é"), 1000)),
	} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"whole": func(r io.Reader) io.Reader { return r }, "bytes": iotest.OneByteReader, "halves": iotest.HalfReader,
		} {
			out, err := io.ReadAll(&utf8Reader{r: wrap(bytes.NewReader([]byte(in)))})
			if utf8.ValidString(in) {
				require.NoError(t, err, "%q %s", in, name)
				require.Equal(t, in, string(out), name)
			} else {
				require.True(t, errors.Is(err, errNotUTF8), "%q %s: %v", in, name, err)
			}
		}
	}
}
