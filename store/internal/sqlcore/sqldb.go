package sqlcore

import (
	"context"
	"database/sql"
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
