package codec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

func TestHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	for _, hs := range [][]envelope.Header{
		nil,
		{{Key: "a", Value: []byte("1")}},
		{{Key: "b", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "", Value: []byte{0, 0xff, '\n'}}, {Key: "b", Value: []byte("dup")}},
	} {
		got, err := DecodeHeaders(EncodeHeaders(hs))
		require.NoError(t, err)
		require.Equal(t, hs, got)
	}
}

func TestDecodeHeadersCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{{2}, {1, 5, 'a'}, {1, 1, 'a', 9, 'x'}, {1, 1, 'a'}} {
		_, err := DecodeHeaders(b)
		require.ErrorIs(t, err, ErrCorruptHeaders, "%v", b)
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	id, err := DecodeCursor(EncodeCursor(42))
	require.NoError(t, err)
	require.EqualValues(t, 42, id)
	id, err = DecodeCursor("")
	require.NoError(t, err)
	require.Zero(t, id)
	for _, c := range []string{"!!", "aWQ6", "eDo0Mg", EncodeCursor(-1)} {
		_, err := DecodeCursor(c)
		require.ErrorIs(t, err, ErrBadCursor, c)
	}
}

func TestLeaseToken(t *testing.T) {
	t.Parallel()
	require.NotZero(t, LeaseToken())
	require.NotEqual(t, LeaseToken(), LeaseToken())
}
