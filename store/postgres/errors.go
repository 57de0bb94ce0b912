package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventcenter/eventcenter/store"
)

// Error is an error PostgreSQL reported, without pgx types: its SQLSTATE
// code (https://www.postgresql.org/docs/current/errcodes-appendix.html) and
// message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message + " (SQLSTATE " + e.Code + ")" }

// translated keeps a driver error's text but only our or the standard
// library's errors in its chain.
type translated struct {
	msg  string
	errs []error
}

func (t *translated) Error() string   { return t.msg }
func (t *translated) Unwrap() []error { return t.errs }

// translate turns an error from pgx into one that wraps no pgx type:
// "no rows" becomes store.ErrNotFound, a PostgreSQL error an *Error, and a
// cancelled or expired context stays errors.Is-comparable with
// context.Canceled / context.DeadlineExceeded. The text is kept.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if errors.Is(err, pgx.ErrNoRows) {
		errs = append(errs, store.ErrNotFound)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		errs = append(errs, &Error{Code: pgErr.Code, Message: pgErr.Message})
	}
	for _, e := range []error{context.Canceled, context.DeadlineExceeded, store.ErrNotMigrated, errInsertRace} {
		if errors.Is(err, e) {
			errs = append(errs, e)
		}
	}
	return &translated{msg: err.Error(), errs: errs}
}
