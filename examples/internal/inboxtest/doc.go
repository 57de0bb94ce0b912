// Package inboxtest runs clientlib/inbox against real PostgreSQL and MySQL /
// MariaDB servers (EVENTCENTER_TEST_POSTGRES, EVENTCENTER_TEST_MYSQL), with
// database/sql and with pgx through inbox.Pgx, and benchmarks its cost per
// message. It lives in the center's module because the clientlib module may
// not depend on database drivers, even in tests.
//
// It also holds DB, the per-dialect test database helper the consumer
// examples' tests share.
package inboxtest
