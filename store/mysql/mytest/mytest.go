package mytest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/store/mysql"
)

// EnvVar names the environment variable holding the test server's DSN.
const EnvVar = "EVENTCENTER_TEST_MYSQL"

// BaseDSN returns the server DSN from EnvVar, or skips the test (fails it
// when CI=true) when the variable is not set.
func BaseDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		const msg = "set " + EnvVar + "='user:pass@tcp(127.0.0.1:3306)/ectest' to run MySQL / MariaDB tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: MySQL tests may not be skipped)")
		}
		t.Skip(msg)
	}
	return dsn
}

// DSN creates a fresh database for this test and returns a DSN on it, for
// code that opens its own connections (including subprocesses). The
// database is dropped at cleanup.
func DSN(t testing.TB) string {
	t.Helper()
	base := BaseDSN(t)
	cfg, err := gomysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("mytest: parse %s: %v", EnvVar, err)
	}
	prefix := cfg.DBName
	if prefix == "" {
		prefix = "ectest"
	}
	name := prefix + "_t" + randomHex(t, 8)
	if err := exec(base, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("mytest: create database %s (is the server up, and may the user create it?): %v", name, err)
	}
	t.Cleanup(func() {
		if err := exec(base, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("mytest: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// DB returns a pool (mysql.OpenDB) on a fresh database of its own (see
// DSN); it is closed and the database dropped at cleanup.
func DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := mysql.OpenDB(DSN(t))
	if err != nil {
		t.Fatalf("mytest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() }) // runs before the database is dropped
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("mytest: ping: %v", err)
	}
	return db
}

func exec(dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("mytest: random: %v", err)
	}
	return hex.EncodeToString(b)
}
