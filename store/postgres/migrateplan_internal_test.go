package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stmt   string
		table  string
		lock   string
		blocks bool
	}{
		{"CREATE INDEX CONCURRENTLY IF NOT EXISTS i\n ON eventcenter_messages (a) WHERE b", "eventcenter_messages", "SHARE UPDATE EXCLUSIVE on eventcenter_messages", false},
		{"create unique index concurrently i on only t (a)", "t", "SHARE UPDATE EXCLUSIVE on t", false},
		{"CREATE INDEX i ON eventcenter_messages (a)", "eventcenter_messages", "SHARE on eventcenter_messages: writes wait", true},
		{"CREATE TABLE IF NOT EXISTS eventcenter_instances (id text)", "", "none (a new table)", false},
		{"CREATE INDEX j ON eventcenter_instances (id)", "", "none (on a table this step creates)", false},
		{"ALTER TABLE eventcenter_messages ADD COLUMN order_key text", "", "ACCESS EXCLUSIVE on eventcenter_messages for an instant", false},
		{"ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS n integer NOT NULL DEFAULT 0", "", "for an instant", false},
		{"ALTER TABLE eventcenter_messages ADD COLUMN at timestamptz DEFAULT now()", "eventcenter_messages", "may rewrite", true},
		{"ALTER TABLE eventcenter_messages ALTER COLUMN tag TYPE bytea", "eventcenter_messages", "may rewrite", true},
		{"DROP INDEX CONCURRENTLY IF EXISTS i", "", "reads and writes go on", false},
		{"ALTER TABLE eventcenter_order_keys SET (fillfactor = 50)", "", "SHARE UPDATE EXCLUSIVE on eventcenter_order_keys", false},
		{"alter table t set (fillfactor=70, autovacuum_vacuum_scale_factor = 0.01)", "", "rewrites nothing", false},
		{"ALTER TABLE t SET (fillfactor = 50), ALTER COLUMN a TYPE bytea", "t", "may rewrite", true},
		{"ALTER TABLE t SET (toast_tuple_target = 128)", "t", "may rewrite", true},
		{"VACUUM FULL eventcenter_messages", "", "unknown statement", true},
	} {
		created := map[string]bool{"eventcenter_instances": true}
		ps := classifyDDL(c.stmt, created)
		require.Equal(t, c.table, ps.Table, c.stmt)
		require.Contains(t, ps.Lock, c.lock, c.stmt)
		require.Equal(t, c.blocks, ps.Blocks, c.stmt)
	}
}

func TestConcurrentIndexName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "eventcenter_messages_orphan_commits",
		concurrentIndex("CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_orphan_commits\n    ON eventcenter_messages (biz_id)"))
	require.Equal(t, "x", concurrentIndex(`create unique index concurrently "x" on t (a)`))
	require.Empty(t, concurrentIndex("CREATE INDEX x ON t (a)"))
}
