// Package postgres is the production store.Store over PostgreSQL (pgx/v5),
// for one or many eventcenter instances sharing a database.
//
// The caller owns the *pgxpool.Pool and opens it after ConfigurePool
// (custom plans for every statement: plans made while the table was empty
// would otherwise be kept as it grows; CheckSchema warns when it is not
// set); the schema is created by Migrate (the
// embedded migrations/*.sql, applied under an advisory lock and recorded in
// eventcenter_schema_migrations) and checked by CheckSchema at start-up
// (an error wrapping store.ErrNotMigrated when missing or old).
//
// Apply is one transaction on one connection: BEGIN and a single SELECT ...
// FOR UPDATE of the touched rows (unnest of the keys) go in one round trip;
// store.Fold applies the state machine in memory; one multi-row INSERT ...
// ON CONFLICT DO NOTHING RETURNING, one multi-row UPDATE and the audit rows
// of operator actions go in the next, with COMMIT when there is no insert
// (else COMMIT follows once the insert's returned count is checked).
// Columns whose values are equal across the batch are sent once instead of
// as arrays. If another instance inserted one of the new keys meanwhile
// (possible after a partition increase), or PostgreSQL reports a deadlock
// or serialization failure, the whole Apply is retried (Options.ApplyTries).
// An error from COMMIT itself may hide a commit that happened; replaying the
// batch is then a no-op, and its sendable messages, leased, are picked up by
// the send scan when the lease runs out.
//
// Claims use UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED), so
// concurrent claimers never get the same message. Errors leave the package
// without pgx types: "no rows" becomes store.ErrNotFound, a server error an
// *Error with its SQLSTATE, and context cancellation stays recognisable.
package postgres
