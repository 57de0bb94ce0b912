package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// SQLDB is a DB on a database/sql handle.
func SQLDB(q Querier) DB { return sqlDB{q} }

type sqlDB struct{ q Querier }

func (d sqlDB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := d.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (d sqlDB) QueryRow(ctx context.Context, q string, args ...any) Row {
	return d.q.QueryRowContext(ctx, q, args...)
}

// sqlRows closes like the other drivers' rows; the error of Close is the
// one Err reports.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// QuestionParam is the "?" parameter of the database/sql drivers.
func QuestionParam(int) string { return "?" }

// InTx runs fn in a transaction of db and commits it; an error from fn
// rolls it back.
func InTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Values returns "(?, ?), (?, ?)" for rows rows of cols placeholders.
func Values(rows, cols int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	var b strings.Builder
	b.Grow(rows * (len(row) + 2))
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// List returns "?, ?, ?" for n parameters.
func List(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
