package inboxtest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// Dialects are the dialects the tests run on.
var Dialects = []inbox.Dialect{inbox.Postgres, inbox.MySQL}

// DB opens a database/sql pool on a fresh database (MySQL) or schema
// (PostgreSQL) of the test's own, with the inbox migrated, or skips the
// test when the dialect's server variable is not set. It is closed and
// dropped at cleanup.
func DB(t testing.TB, d inbox.Dialect) *sql.DB {
	t.Helper()
	var db *sql.DB
	switch d {
	case inbox.Postgres:
		var err error
		db, err = sql.Open("pgx", pgtest.DSN(t))
		if err != nil {
			t.Fatalf("inboxtest: open postgres: %v", err)
		}
		t.Cleanup(func() { _ = db.Close() }) // before the schema is dropped
	case inbox.MySQL:
		db = mytest.DB(t)
	default:
		t.Fatalf("inboxtest: dialect %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inbox.Migrate(ctx, db, d); err != nil {
		t.Fatalf("inboxtest: %v", err)
	}
	return db
}

// LedgerSchema is a consumer's own table for tests and benchmarks: one row
// per message id with the number of times its effect was applied.
func LedgerSchema(d inbox.Dialect) string {
	if d == inbox.MySQL {
		return "CREATE TABLE ledger (id VARBINARY(320) NOT NULL PRIMARY KEY, applied INT NOT NULL, amount BIGINT NOT NULL) ENGINE = InnoDB"
	}
	return "CREATE TABLE ledger (id TEXT NOT NULL PRIMARY KEY, applied INT NOT NULL, amount BIGINT NOT NULL)"
}

// Apply is the consumer's effect in the ledger: it counts one more
// application of id (a second one is the duplicate the inbox must prevent).
func Apply(ctx context.Context, tx inbox.Execer, d inbox.Dialect, id string, amount int64) error {
	q := "INSERT INTO ledger (id, applied, amount) VALUES ($1, 1, $2) ON CONFLICT (id) DO UPDATE SET applied = ledger.applied + 1, amount = ledger.amount + EXCLUDED.amount"
	if d == inbox.MySQL {
		q = "INSERT INTO ledger (id, applied, amount) VALUES (?, 1, ?) ON DUPLICATE KEY UPDATE applied = applied + 1, amount = amount + VALUES(amount)"
	}
	if _, err := tx.ExecContext(ctx, q, id, amount); err != nil {
		return fmt.Errorf("apply %s to the ledger: %w", id, err)
	}
	return nil
}

// Ledger returns how many ids the ledger holds, how many applications it
// counted, and the ids applied more than once.
func Ledger(ctx context.Context, t testing.TB, db *sql.DB) (ids, applications int64, twice []string) {
	t.Helper()
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(applied), 0) FROM ledger").Scan(&ids, &applications); err != nil {
		t.Fatalf("inboxtest: read ledger: %v", err)
	}
	rows, err := db.QueryContext(ctx, "SELECT id FROM ledger WHERE applied > 1 ORDER BY id")
	if err != nil {
		t.Fatalf("inboxtest: read ledger: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatalf("inboxtest: read ledger: %v", err)
		}
		twice = append(twice, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("inboxtest: read ledger: %v", err)
	}
	return ids, applications, twice
}
