package ingest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dead letters are gzip batches by default (every mainstream client reads
// them without a codec package) and DLQCompression chooses another codec.
func TestDeadLetterCompression(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		setting string
		want    uint8 // Kafka's attribute: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	}{{"", 1}, {"none", 0}, {"zstd", 4}} {
		e := newEnv(t, 1)
		cfg := e.config()
		cfg.DLQCompression = tc.setting
		e.start(cfg, newMemStore(), nil, NewOwnership())
		// Malformed (no ec-topic) and compressible: franz-go sends a batch
		// uncompressed when compressing does not make it smaller.
		r := prepareRec("shop", "k", bytes.Repeat([]byte("order "), 200))
		r.Headers = r.Headers[:3]
		e.produce(r)
		dead := e.readDLQ(1)
		require.Equal(t, tc.want, dead[0].Attrs.CompressionType(), "DLQCompression %q", tc.setting)
	}
}

func TestUnknownDLQCompressionIsRefused(t *testing.T) {
	t.Parallel()
	cfg := Config{Brokers: []string{"127.0.0.1:1"}, DLQCompression: "brotli"}
	_, err := New(cfg, newMemStore(), NewOwnership())
	require.ErrorContains(t, err, `DLQCompression: compression "brotli": unknown codec`)
}
