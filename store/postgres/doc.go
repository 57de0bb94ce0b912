// Package postgres is the production store.Store over PostgreSQL (pgx/v5),
// for one or many eventcenter instances sharing a database.
//
// The caller owns the *pgxpool.Pool; the schema is created by Migrate (the
// embedded migrations/*.sql, applied under an advisory lock and recorded in
// eventcenter_schema_migrations) and checked by CheckSchema at start-up.
//
// Apply is one transaction of at most three statements: the touched rows
// are loaded and locked in one SELECT ... FOR UPDATE, store.Fold applies the
// state machine, and the result is written with one multi-row INSERT ... ON
// CONFLICT DO NOTHING and one multi-row UPDATE (plus the audit rows of
// operator actions), sent in one pipelined batch. If another instance
// inserted one of the new keys meanwhile (possible after a partition
// increase), or PostgreSQL reports a deadlock or serialization failure, the
// whole Apply is retried a few times. Claims use FOR UPDATE SKIP LOCKED, so
// concurrent claimers never get the same message. pgx errors do not escape
// the package's types: "no rows" becomes store.ErrNotFound, others are
// wrapped with what was being done.
package postgres
