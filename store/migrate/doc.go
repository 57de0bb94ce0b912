// Package migrate reads a dialect's embedded migration files. Each driver
// (store/postgres, store/mysql, store/sqlite) embeds its own
// migrations/*.sql, named NNNN_description.sql, applies them in version
// order and records each version (by number and name, not content) in
// eventcenter_schema_migrations. A file whose first line is
// NoTransactionMarker is applied statement by statement outside a
// transaction (PostgreSQL's CREATE INDEX CONCURRENTLY).
package migrate
