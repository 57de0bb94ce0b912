package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// prepareFile checks the database file's directory (SQLite itself says
// only "out of memory (14)" when it is missing) and, when the file does
// not exist, creates it empty and readable by the owner only: SQLite gives
// its -wal and -shm files the database file's permissions, and they hold
// message payloads. Without migrating (checkOnly) a missing file is not
// created: the error wraps store.ErrNotMigrated.
func prepareFile(path string, checkOnly bool) error {
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	case checkOnly:
		return fmt.Errorf("check schema: database file %s does not exist: %w", path, store.ErrNotMigrated)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // created meanwhile by another process
	}
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	return f.Close()
}

// checkSchema returns an error wrapping store.ErrNotMigrated when the
// schema is missing or older than this binary's migrations.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	var n int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, migrate.Table).Scan(&n); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("check schema: no %s table: %w", migrate.Table, store.ErrNotMigrated)
	}
	var cur int
	if err := s.w.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if want := migrate.Latest(ms); cur < want {
		return fmt.Errorf("check schema: version %d, this binary needs %d: %w", cur, want, store.ErrNotMigrated)
	}
	return nil
}
