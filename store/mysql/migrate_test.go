package mysql_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/migrate"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	ps := mysql.Classify("CREATE TABLE eventcenter_instances (\n id INT)")
	require.Equal(t, "none (a new table)", ps.Lock)
	require.False(t, ps.Blocks)
	ps = mysql.Classify("ALTER TABLE eventcenter_messages ADD COLUMN order_key VARBINARY(255), ALGORITHM=INPLACE, LOCK=NONE")
	require.Equal(t, "eventcenter_messages", ps.Table)
	require.Contains(t, ps.Lock, "online DDL")
	require.False(t, ps.Blocks)
	ps = mysql.Classify("CREATE INDEX i ON eventcenter_messages (tag)")
	require.Equal(t, "eventcenter_messages", ps.Table)
	require.True(t, ps.Blocks)
}

// A step whose metadata lock is held by an open transaction waits at most
// lock_wait_timeout per try and is tried again until it gets it; with too
// few tries it gives up and is not recorded.
func TestMigrateLockWaitRetry(t *testing.T) {
	t.Parallel()
	ms, err := mysql.Migrations()
	require.NoError(t, err)
	step := migrate.Migration{Version: len(ms) + 1, Name: "add_column",
		SQL: "ALTER TABLE eventcenter_audit ADD COLUMN test_col INT NULL, ALGORITHM=INPLACE, LOCK=NONE;"}
	all := append(append([]migrate.Migration(nil), ms...), step)
	for _, c := range []struct {
		tries int
		ok    bool
	}{{30, true}, {2, false}} {
		db := mytest.DB(t)
		require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms, 1, 10, 0))
		tx, err := db.BeginTx(t.Context(), nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(t.Context(), "SELECT count(*) FROM eventcenter_audit") // a shared metadata lock until the end of tx
		require.NoError(t, err)
		// With enough tries the holder lets go after 2.5 s, mid-retries;
		// without, it holds on until the migration has returned (a fixed
		// 2.5 s let a late second try through on a loaded machine).
		// releasing closes before the rollback: the rollback frees the
		// lock on the server, and the migration can return before the
		// goroutine gets back from Rollback (CI once saw that).
		releasing, released, giveUp := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(released)
			if c.ok {
				time.Sleep(2500 * time.Millisecond)
			} else {
				<-giveUp
			}
			close(releasing)
			_ = tx.Rollback()
		}()
		err = mysql.MigrateSteps(t.Context(), db, all, 1, c.tries, 100*time.Millisecond)
		close(giveUp)
		if c.ok {
			require.NoError(t, err)
			select {
			case <-releasing:
			default:
				t.Fatal("the step ran while the transaction held its table")
			}
			var n int
			require.NoError(t, db.QueryRowContext(t.Context(), "SELECT MAX(version) FROM eventcenter_schema_migrations").Scan(&n))
			require.Equal(t, step.Version, n)
		} else {
			require.ErrorContains(t, err, "gave up after 2 tries")
		}
		<-released
	}
}
