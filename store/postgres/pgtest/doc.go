// Package pgtest gives each test an isolated PostgreSQL schema in the server
// named by the EVENTCENTER_TEST_POSTGRES environment variable (a DSN, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable).
//
// DSN creates a fresh schema with a random name, returns a DSN whose
// connections use it as their search_path, and drops it when the test ends.
// Pool does the same and returns a pgxpool.Pool on it, closed at cleanup.
// Without the variable, tests skip with a message saying how to run them;
// with CI=true they fail instead, so CI cannot silently skip them.
//
// Cluster starts a throwaway PostgreSQL cluster of its own (initdb into a
// temporary directory, a free port) for tests that need several servers or
// restart one; it skips without the binaries, or fails with CI=true.
// Server.Standby makes a streaming standby of such a cluster (pg_basebackup,
// synchronous or asynchronous), Server.Promote promotes it, and FailoverDSN
// lists both hosts with target_session_attrs=read-write, for failover
// tests.
package pgtest
