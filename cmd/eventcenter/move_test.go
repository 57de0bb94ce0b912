package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func shardsConfig(t *testing.T, path string, dsns [2]string, buckets [2]string) {
	t.Helper()
	body := fmt.Sprintf("store:\n  driver: sharded\n  shards:\n    - {dsn: %q, buckets: %q}\n    - {dsn: %q, buckets: %q}\n",
		dsns[0], buckets[0], dsns[1], buckets[1])
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
}

// eventcenter move-buckets moves half the buckets of a full shard to an
// empty one and prints the new bucket lists; with them, every message is
// found. Buckets not on --from, a store that is not sharded and the same
// shard twice are refused before anything moves.
func TestMoveBucketsCommand(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	dsns := [2]string{a.DSN(), b.DSN()}
	path := filepath.Join(t.TempDir(), "ec.yaml")
	shardsConfig(t, path, dsns, [2]string{"0-1023", ""})
	out, err := run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "migrated sharded store")

	open := func() store.Store {
		cfg, err := config.Load(path)
		require.NoError(t, err)
		st, _, err := center.OpenStore(t.Context(), cfg.Store, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		return st
	}
	st := open()
	keys := storetest.Keys("cli", 100)
	var changes []store.Change
	for _, k := range keys {
		changes = append(changes, storetest.Prepare("shop", k, 0, time.Now()))
	}
	_, err = st.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	out, err = run(t, "move-buckets", "--config", path, "--from", "1", "--to", "0", "--buckets", "0-9")
	require.ErrorContains(t, err, "bucket 0 is on shard 0, not 1")
	require.NotContains(t, out, "moved")
	_, err = run(t, "move-buckets", "--config", path, "--from", "0", "--to", "0", "--buckets", "0-9")
	require.ErrorContains(t, err, "two different shards")
	_, err = run(t, "move-buckets", "--config", path, "--buckets", "")
	require.ErrorContains(t, err, "want a list such as 512-1023")

	out, err = run(t, "move-buckets", "--config", path, "--from", "0", "--to", "1", "--buckets", "512-1023")
	require.NoError(t, err, out)
	require.Contains(t, out, `store.shards[0].buckets: "0-511"`)
	require.Contains(t, out, `store.shards[1].buckets: "512-1023"`)
	require.Regexp(t, `moved [1-9][0-9]* messages and 0 audit records from shard 0 to shard 1`, out)
	// Not a terminal: one progress line per phase.
	require.Regexp(t, `(?m)^move-buckets: copy messages: ([1-9][0-9]*)/([1-9][0-9]*) messages in [0-9.]+m?s \([0-9.]+ messages/s\)$`, out)
	require.Regexp(t, `(?m)^move-buckets: copy audit records: 0 records in `, out)
	require.Regexp(t, `(?m)^move-buckets: delete from source: [1-9][0-9]*/[1-9][0-9]* rows in `, out)
	require.NotContains(t, out, "\r", "no redrawn line off a terminal")

	shardsConfig(t, path, dsns, [2]string{"0-511", "512-1023"})
	st = open()
	defer st.Close()
	for _, k := range keys {
		_, err := st.Get(t.Context(), "shop", k)
		require.NoError(t, err, k)
	}

	sqlite := filepath.Join(t.TempDir(), "sqlite.yaml")
	require.NoError(t, os.WriteFile(sqlite, []byte("store:\n  driver: sqlite\n  dsn: /tmp/x.db\n"), 0o600))
	_, err = run(t, "move-buckets", "--config", sqlite, "--buckets", "0-9")
	require.ErrorContains(t, err, "needs sharded")
}
