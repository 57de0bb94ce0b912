// Package inbox gives a consumer of eventcenter's forwarded messages
// exactly-once effects: it records each message's id in an inbox table in
// the same database transaction as the consumer's own writes, so that a
// redelivered message is recognised and skipped, and a transaction that
// aborts leaves no trace (the message counts as new when it comes again).
//
// The center forwards at least once: every forwarded message carries
// ec-id = "bizID:messageKey" (a Kafka header, a RocketMQ property), stable
// across redeliveries. The consumer's loop is
//
//	tx := begin()
//	isNew, err := in.Record(ctx, tx, id)  // INSERT ... ON CONFLICT DO NOTHING
//	if isNew { apply the effects with tx }
//	commit(tx)
//	then commit the Kafka offset / acknowledge the RocketMQ message
//
// A crash anywhere before the database commit undoes the inbox row with the
// effects; a crash after it but before the offset commit redelivers a
// message the inbox then skips. Rows are kept per consumer group, so two
// groups that both consume a topic each apply it once.
//
// Dialects: PostgreSQL (INSERT ... ON CONFLICT DO NOTHING) and MySQL 8 /
// MariaDB 10.6+ (INSERT IGNORE; ids are VARBINARY so they compare byte for
// byte). The schema ships as embedded SQL (Migrate, or Schema for your own
// migration tool); Purge deletes rows older than a retention that must
// exceed the longest time a message can be redelivered (the topic's
// retention, or how far back a consumer group may be reset).
//
// Transactions: Record takes any Execer; *sql.Tx, *sql.Conn and *sql.DB are
// ones, and Pgx adapts a pgx.Tx (or pgxpool.Tx, pgx.Conn) without this
// package importing pgx, so the clientlib module keeps depending on
// franz-go only. RocketMQ messages are read through their GetProperty
// method, so the RocketMQ client is not imported either.
package inbox
