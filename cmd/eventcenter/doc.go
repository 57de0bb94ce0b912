// Command eventcenter is the transactional-message center.
//
//	eventcenter dev                        everything embedded: kfake broker, SQLite
//	eventcenter serve --config FILE        real Kafka and PostgreSQL
//	eventcenter migrate --config FILE      apply database migrations
//	eventcenter admin ...                  operator commands over the admin API
//	eventcenter version
//
// The tools that measure and stress the center (bench, soak) are a separate
// command, cmd/ectools, so that this binary links none of them; "dev
// --rocketmq" needs a build with -tags rocketmqfake (the RocketMQ stand-in is
// test code).
//
// Configuration precedence, lowest first: built-in defaults, the YAML file,
// EVENTCENTER_* environment variables, command-line flags.
//
// Shutdown: the first SIGINT/SIGTERM stops the center in order (stop
// consuming and commit, drain check-backs and sends, close clients, close the
// store); a second one exits at once.
package main
