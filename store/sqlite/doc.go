// Package sqlite is the embedded store.Store over modernc.org/sqlite (pure
// Go, no cgo), the default of "eventcenter dev" and small installations.
//
// Open opens (or creates, owner-only) a database file, sets WAL mode, a busy
// timeout and foreign keys, and applies the embedded migrations
// (migrations/*.sql, recorded in eventcenter_schema_migrations) or, with
// Options.CheckOnly (serve without store.auto_migrate), checks that they
// were applied.
//
// Single writer: SQLite allows one writing transaction at a time. The store
// keeps one write connection (every write is a BEGIN IMMEDIATE transaction
// on it, so concurrent writers in this process queue in Go, and another
// process writing the same file waits on the busy timeout) and a small pool
// of read-only connections that, thanks to WAL, read while a write runs.
// Because claims are writes, two concurrent claimers are serialised: the
// second sees the first one's leases and never gets the same message. Only
// one eventcenter instance should use a database file; to run several, use
// store/postgres.
package sqlite
