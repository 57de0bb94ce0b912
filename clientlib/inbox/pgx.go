package inbox

import (
	"context"
	"database/sql"
	"errors"
)

// RowsAffecter is what pgx's pgconn.CommandTag offers.
type RowsAffecter interface{ RowsAffected() int64 }

// PgxExecer is the Exec method of pgx.Tx, pgx.Conn, pgxpool.Tx,
// pgxpool.Conn and pgxpool.Pool (R is pgconn.CommandTag).
type PgxExecer[R RowsAffecter] interface {
	Exec(ctx context.Context, sql string, arguments ...any) (R, error)
}

// Pgx adapts a pgx transaction (or connection) to an Execer:
//
//	isNew, err := in.Record(ctx, inbox.Pgx(tx), id) // tx is a pgx.Tx
//
// It is generic over pgx's command tag so that this package does not import
// pgx (and the clientlib module does not depend on it).
func Pgx[R RowsAffecter](tx PgxExecer[R]) Execer { return pgxExecer[R]{tx} }

type pgxExecer[R RowsAffecter] struct{ tx PgxExecer[R] }

func (p pgxExecer[R]) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := p.tx.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxResult(tag.RowsAffected()), nil
}

// errNoLastInsertID is what LastInsertId of a pgx result returns.
var errNoLastInsertID = errors.New("inbox: LastInsertId is not supported by pgx")

type pgxResult int64

func (pgxResult) LastInsertId() (int64, error)   { return 0, errNoLastInsertID }
func (r pgxResult) RowsAffected() (int64, error) { return int64(r), nil }
