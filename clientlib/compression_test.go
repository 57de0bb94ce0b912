package clientlib_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib"
)

// Control records are snappy batches by default (only the center reads
// them; the payload repeats so that compressing makes the batch smaller,
// else franz-go leaves it uncompressed), and WithCompression changes that.
func TestProducerCompression(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []clientlib.Option
		want uint8 // Kafka's attribute: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	}{
		{"default snappy", nil, 2},
		{"gzip", []clientlib.Option{clientlib.WithCompression("gzip")}, 1},
		{"none", []clientlib.Option{clientlib.WithCompression("none")}, 0},
		{"preference list", []clientlib.Option{clientlib.WithCompression("zstd, gzip")}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1)
			p := newProducer(t, c, tc.opts...)
			require.NoError(t, p.Prepare(t.Context(), clientlib.Message{BizID: "b", Key: "k", Payload: bytes.Repeat([]byte("payload "), 200), ForwardTopic: "t"}))
			recs := readControl(t, c, 1)
			require.Equal(t, tc.want, recs[0].Attrs.CompressionType())
		})
	}
}

func TestWithCompressionErrors(t *testing.T) {
	_, err := clientlib.NewProducer(clientlib.WithBrokers("127.0.0.1:1"), clientlib.WithCompression("brotli"))
	require.ErrorContains(t, err, `WithCompression: compression "brotli": unknown codec "brotli" (want none, gzip, snappy, lz4, zstd`)
	_, err = clientlib.NewProducer(clientlib.WithBrokers("127.0.0.1:1"), clientlib.WithCompression("none,gzip"))
	require.ErrorContains(t, err, "none must come last")
}
