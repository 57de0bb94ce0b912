package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

func TestOrderKeyRoundTrip(t *testing.T) {
	t.Parallel()
	e := prepare()
	e.OrderKey = "order-42"
	r, err := envelope.Encode(e)
	require.NoError(t, err)
	var found bool
	for _, h := range r.Headers {
		if h.Key == envelope.HeaderOrderKey {
			found = true
			require.Equal(t, "order-42", string(h.Value))
		}
	}
	require.True(t, found, "ec-order-key written")
	got, err := envelope.Decoder{}.Decode(r)
	require.NoError(t, err)
	require.Equal(t, "order-42", got.OrderKey)
	require.Equal(t, e.Verify, got.Verify, "the strings after the order key are cut right")
}

func TestOrderKeyValidation(t *testing.T) {
	t.Parallel()
	e := prepare()
	e.OrderKey = strings.Repeat("k", envelope.MaxOrderKeyLen+1)
	_, err := envelope.Encode(e)
	require.True(t, errors.Is(err, envelope.ErrInvalid), "%v", err)
	e.OrderKey = "a\nb"
	_, err = envelope.Encode(e)
	require.ErrorIs(t, err, envelope.ErrInvalid)

	// Only a PREPARE carries it.
	_, err = envelope.Encode(envelope.Envelope{Type: envelope.Commit, BizID: "b", MessageKey: "k", OrderKey: "o"})
	require.ErrorIs(t, err, envelope.ErrInvalid)

	// A repeated header is an error, as for every ec-* header.
	_, err = envelope.Decoder{}.Decode(native("b:k", "x", envelope.HeaderType, "prepare", envelope.HeaderBiz, "b",
		envelope.HeaderKey, "k", envelope.HeaderTopic, "t", envelope.HeaderOrderKey, "o", envelope.HeaderOrderKey, "p"))
	require.ErrorIs(t, err, envelope.ErrInvalid)

	// On a COMMIT it is ignored like the other prepare-only headers.
	c, err := envelope.Decoder{}.Decode(native("b:k", "", envelope.HeaderType, "commit", envelope.HeaderBiz, "b",
		envelope.HeaderKey, "k", envelope.HeaderOrderKey, "o"))
	require.NoError(t, err)
	require.Empty(t, c.OrderKey)
}

func TestOrderRoutingKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "orders:o-1", envelope.OrderRoutingKey("orders", "o-1"))
}

// Kafka's own murmur2 values (the Java client's Utils.murmur2 test
// vectors) and partitions.
func TestPartitionForIsKafkasMurmur2(t *testing.T) {
	t.Parallel()
	// org.apache.kafka.common.utils.UtilsTest#testMurmur2.
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		got := envelope.PartitionFor(key, 1<<30)
		require.Equal(t, want&0x7fffffff%(1<<30), got, "%s", key)
	}
	require.Panics(t, func() { envelope.PartitionFor("k", 0) })
}
