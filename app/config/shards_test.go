package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// store.driver sharded with store.shards parses and validates; every
// mistake in the shards is named by its YAML path.
func TestStoreShards(t *testing.T) {
	t.Parallel()
	const ok = "store:\n  driver: sharded\n  shards:\n" +
		"    - {dsn: \"postgres://a/ec\", buckets: \"0-511\"}\n" +
		"    - {dsn: \"postgres://b/ec\", buckets: \"512-1023\"}\n"
	cfg := Default()
	require.NoError(t, Parse([]byte(ok), &cfg))
	require.NoError(t, cfg.Validate())
	require.Equal(t, []StoreShard{{DSN: "postgres://a/ec", Buckets: "0-511"}, {DSN: "postgres://b/ec", Buckets: "512-1023"}}, cfg.Store.Shards)

	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"no shards", "store:\n  driver: sharded\n", []string{"store.shards", "at least one shard"}},
		{"bad dsn", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"mysql://x\", buckets: \"0-1023\"}\n", []string{"store.shards[0].dsn", "postgres://"}},
		{"bad range", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"0-1024\"}\n", []string{"store.shards[0].buckets", "outside 0-1023"}},
		{"reversed", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"9-1\"}\n", []string{"store.shards[0].buckets"}},
		{"not a number", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"all\"}\n", []string{"store.shards[0].buckets", "bad bucket"}},
		{"gap", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"0-511\"}\n    - {dsn: \"postgres://b/ec\", buckets: \"513-1023\"}\n",
			[]string{"store.shards", "bucket 512 is not mapped"}},
		{"overlap", "store:\n  driver: sharded\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"0-512\"}\n    - {dsn: \"postgres://b/ec\", buckets: \"512-1023\"}\n",
			[]string{"store.shards", "bucket 512 is already mapped to shard 0"}},
		{"shards without sharded", "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n  shards:\n    - {dsn: \"postgres://a/ec\", buckets: \"0-1023\"}\n", []string{"store.shards", "sharded only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Default()
			err := Parse([]byte(tc.body), &cfg)
			if err == nil {
				err = cfg.Validate()
			}
			requireUserError(t, err, tc.want...)
		})
	}
}
