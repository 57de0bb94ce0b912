package bench

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/rawlifecycle"
)

// MySQL / MariaDB: every run works in fresh databases named after the
// DSN's (<db>_bench_<run>[_raw]), so a user granted ALL on `<db>%`.* can run
// it, and drops them at the end.

// freshDatabase creates a database named after dsn's and returns a DSN on
// it and a function dropping it.
func freshDatabase(ctx context.Context, dsn, suffix string) (string, func(), error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("parse dsn: %w", err)
	}
	name := cfg.DBName + "_" + suffix
	if err := myExec(ctx, dsn, "CREATE DATABASE `"+name+"`"); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = myExec(dctx, dsn, "DROP DATABASE IF EXISTS `"+name+"`")
	}
	cfg.DBName = name
	return cfg.FormatDSN(), drop, nil
}

func myExec(ctx context.Context, dsn, stmt string) error {
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

func myVersion(ctx context.Context, dsn string) string {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return ""
	}
	defer db.Close()
	var v string
	_ = db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
	return v
}

// mysqlBaseline returns the raw lifecycle writer of the store baseline on a
// fresh database, and its cleanup.
func mysqlBaseline(ctx context.Context, cfg Config, runID string, writers int) (func(context.Context, int) error, func(), error) {
	dsn, drop, err := freshDatabase(ctx, cfg.DSN, "bench_"+runID+"_raw")
	if err != nil {
		return nil, nil, err
	}
	db, err := mysql.OpenDB(dsn)
	if err != nil {
		drop()
		return nil, nil, err
	}
	db.SetMaxOpenConns(writers)
	db.SetMaxIdleConns(writers)
	cleanup := func() { _ = db.Close(); drop() }
	if err := mysql.Migrate(ctx, db); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("migrate: %w", err)
	}
	return batchedLifecycle(rawlifecycle.MySQL(db, make([]byte, cfg.Payload)), runID), cleanup, nil
}
