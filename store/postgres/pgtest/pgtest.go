package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store/postgres"
)

// EnvVar names the environment variable holding the test server's DSN.
const EnvVar = "EVENTCENTER_TEST_POSTGRES"

// BaseDSN returns the server DSN from EnvVar, or skips the test (fails it
// when CI=true) when the variable is not set.
func BaseDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		const msg = "set " + EnvVar + "=postgres://... to run PostgreSQL tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: PostgreSQL tests may not be skipped)")
		}
		t.Skip(msg)
	}
	return dsn
}

// DSN creates a fresh schema for this test and returns a DSN whose sessions
// use it (search_path), for code that opens its own connections (including
// subprocesses). The schema is dropped at cleanup.
func DSN(t testing.TB) string {
	t.Helper()
	return DSNOn(t, BaseDSN(t))
}

// DSNOn is DSN on the server of the DSN base (a Cluster's, say).
func DSNOn(t testing.TB, base string) string {
	t.Helper()
	schema := "ec_test_" + randomHex(t, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { dropSchema(t, base, schema) })
	dsn, err := WithSearchPath(base, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Pool returns a pool on a fresh schema of its own (see DSN); it is closed
// and the schema dropped at cleanup.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolOn(t, BaseDSN(t))
}

// PoolOn is Pool on the server of the DSN base (a Cluster's, say).
func PoolOn(t testing.TB, base string) *pgxpool.Pool {
	t.Helper()
	dsn := DSNOn(t, base)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse DSN: %v", err)
	}
	postgres.ConfigurePool(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the schema is dropped
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgtest: ping: %v", err)
	}
	return pool
}

// WithSearchPath returns dsn (URL or keyword/value form) with the session
// option search_path=schema added ("options=-c search_path=...", understood
// by pgx, libpq and the server).
func WithSearchPath(dsn, schema string) (string, error) {
	opt := "-c search_path=" + schema
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse DSN: %w", err)
		}
		q := u.Query()
		if o := q.Get("options"); o != "" {
			opt = o + " " + opt
		}
		q.Set("options", opt)
		// Spaces as %20: pgx does not read '+' as a space.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String(), nil
	}
	if strings.Contains(dsn, "options=") {
		return "", fmt.Errorf("DSN already has options; use the URL form")
	}
	return strings.TrimSpace(dsn) + " options='" + opt + "'", nil
}

func dropSchema(t testing.TB, base, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("pgtest: drop schema %s: connect: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("pgtest: random: %v", err)
	}
	return hex.EncodeToString(b)
}
