// Package migrate reads a dialect's embedded migration files. Each driver
// (store/postgres, store/sqlite) embeds its own migrations/*.sql, named
// NNNN_description.sql, and applies them in version order in its own
// transaction, recording each version in eventcenter_schema_migrations.
package migrate
