package kafkarec_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
)

func TestCompression(t *testing.T) {
	for setting, want := range map[string][]kgo.CompressionCodec{
		"":               {gzipFast},
		"gzip":           {gzipFast},
		" ZSTD , lz4 ":   {kgo.ZstdCompression(), kgo.Lz4Compression()},
		"snappy,none":    {kgo.SnappyCompression(), kgo.NoCompression()},
		"none":           {kgo.NoCompression()},
		"zstd,gzip,none": {kgo.ZstdCompression(), gzipFast, kgo.NoCompression()},
	} {
		got, err := kafkarec.Compression(setting)
		require.NoError(t, err, setting)
		require.Equal(t, want, got, setting)
	}
	for setting, msg := range map[string]string{
		"brotli":    `unknown codec "brotli"`,
		"gzip,gzip": `"gzip" is listed twice`,
		"none,gzip": "none must come last",
		"gzip,":     `unknown codec ""`,
	} {
		_, err := kafkarec.Compression(setting)
		require.ErrorContains(t, err, msg, setting)
	}
}

// gzipFast is "gzip" as Compression returns it.
var gzipFast = kgo.GzipCompression().WithLevel(kafkarec.GzipLevel)
