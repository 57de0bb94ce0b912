package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Error is an error PostgreSQL reported, without pgx types: its SQLSTATE
// code (https://www.postgresql.org/docs/current/errcodes-appendix.html) and
// message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message + " (SQLSTATE " + e.Code + ")" }

// translate turns an error from pgx into one that wraps no pgx type:
// "no rows" becomes store.ErrNotFound, a PostgreSQL error an *Error, and a
// cancelled or expired context stays errors.Is-comparable with
// context.Canceled / context.DeadlineExceeded. The text is kept.
func translate(err error) error {
	var errs []error
	if errors.Is(err, pgx.ErrNoRows) {
		errs = append(errs, store.ErrNotFound)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		errs = append(errs, &Error{Code: pgErr.Code, Message: pgErr.Message})
	}
	return sqlcore.Translated(err, errs, sqlcore.ErrInsertRace)
}
