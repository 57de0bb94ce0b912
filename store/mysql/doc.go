// Package mysql is a store.Store over MySQL (8.0.4 or later) and MariaDB
// (10.6 or later) with go-sql-driver/mysql, for shops that keep their
// transactional-message state in MySQL, as TrustMessage does.
//
// OpenDB opens the *sql.DB the store needs (times in UTC to the
// microsecond, parameters interpolated by the driver: one round trip per
// statement, rows affected counting matched rows, every session READ
// COMMITTED). The schema is created by Migrate (the embedded
// migrations/*.sql, under a GET_LOCK named lock, recorded in
// eventcenter_schema_migrations) and checked by CheckSchema at start-up,
// which also checks the server version (ErrOldServer names the version
// found). The caller owns the *sql.DB unless Options.CloseDB is set.
//
// The columns are PostgreSQL's and SQLite's. MySQL has no partial indexes:
// each is a STORED generated column that is NULL outside the rows the
// partial index would hold (send_due_at, verify_due_at, purge_at,
// prepared_biz, orphan_biz), with an index on it, and the scans ask for
// those columns.
//
// Apply is one transaction: SELECT ... FOR UPDATE of the touched rows (one
// range of the unique key per bizID), store.Fold applies the state machine
// in memory, then multi-row INSERTs (their ids read back by key: MySQL has
// no RETURNING), multi-row UPDATEs joined with JSON_TABLE (the columns that
// differ per row; equal ones are set once), the bodies that arrived after
// their decision, and the audit rows. A duplicate key (another instance
// inserted one of the new keys), a deadlock (1213) or a lock wait timeout
// (1205) rolls the batch back and tries it again (Options.ApplyTries). An
// error from COMMIT itself may hide a commit that happened; replaying the
// batch is then a no-op.
//
// Claims read each partition's due index in order with SELECT ... ORDER BY
// due LIMIT n FOR UPDATE SKIP LOCKED (no sort, so only returned rows are
// locked), then lease what they return with one UPDATE, in one
// transaction: concurrent claimers never get the same message. Errors leave
// the package without driver types: "no rows" becomes store.ErrNotFound, a
// missing table store.ErrNotMigrated, a server error an *Error with its
// number and SQLSTATE, conflicts worth retrying also ErrRetryable, and
// context cancellation stays recognisable.
package mysql
