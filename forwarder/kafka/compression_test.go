package kafka_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
)

// Forwarded records are gzip batches by default, which every mainstream
// consumer decodes without a codec package (KafkaJS 2.x has no snappy),
// and Compression chooses another codec.
func TestForwardedRecordsCompression(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		setting string
		want    uint8 // Kafka's attribute: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	}{{"", 1}, {"none", 0}, {"lz4,gzip", 3}} {
		c := newCluster(t, kfake.SeedTopics(1, "biz"))
		tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.Compression = tc.setting })
		// Compressible: franz-go sends a batch uncompressed when
		// compressing does not make it smaller.
		res := tg.Send(t.Context(), []forwarder.Record{{ID: "b:k", Topic: "biz", Key: "k", Value: bytes.Repeat([]byte("order "), 200)}})
		require.NoError(t, res[0].Err)
		got := consume(t, c, "biz", 1)
		require.Equal(t, tc.want, got[0].Attrs.CompressionType(), "compression %q", tc.setting)
	}
}

func TestUnknownCompressionIsRefused(t *testing.T) {
	t.Parallel()
	_, err := kafka.New(kafka.Config{Name: "k", Brokers: []string{"127.0.0.1:1"}, Compression: "brotli"})
	require.ErrorContains(t, err, `Compression: compression "brotli": unknown codec "brotli"`)
}
