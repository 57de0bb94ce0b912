package mysql

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Error is an error the server reported, without driver types: its error
// number (https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html),
// SQLSTATE and message.
type Error struct {
	Number   uint16
	SQLState string
	Message  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (error %d, SQLSTATE %s)", e.Message, e.Number, e.SQLState)
}

// Server error numbers the store acts on.
const (
	errDupEntry        = 1062 // ER_DUP_ENTRY
	errNoSuchTable     = 1146 // ER_NO_SUCH_TABLE
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	errLockDeadlock    = 1213 // ER_LOCK_DEADLOCK
)

// ErrRetryable marks an error after which the same work may simply be tried
// again: a deadlock, a lock wait timeout, or a concurrent insert of the same
// message. The transaction was rolled back. Apply retries these itself
// (Options.ApplyTries); an error from it that still wraps ErrRetryable ran
// out of tries.
var ErrRetryable = errors.New("retryable database conflict")

// retryable: a concurrent insert of the same message, or a deadlock, lock
// wait timeout, duplicate key or serialization failure.
func retryable(err error) bool {
	var myErr *gomysql.MySQLError
	switch {
	case errors.Is(err, sqlcore.ErrInsertRace):
		return true
	case !errors.As(err, &myErr):
		return false
	}
	return slices.Contains([]uint16{errLockDeadlock, errLockWaitTimeout, errDupEntry}, myErr.Number) ||
		string(myErr.SQLState[:]) == "40001"
}

// translate turns an error from the driver into one that wraps no driver
// type: "no rows" becomes store.ErrNotFound, a missing table
// store.ErrNotMigrated, a server error an *Error, a deadlock, lock wait
// timeout or concurrent insert also ErrRetryable, and a cancelled or expired
// context stays errors.Is-comparable with context.Canceled /
// context.DeadlineExceeded. The text is kept.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if errors.Is(err, sql.ErrNoRows) {
		errs = append(errs, store.ErrNotFound)
	}
	var myErr *gomysql.MySQLError
	if errors.As(err, &myErr) {
		errs = append(errs, &Error{Number: myErr.Number, SQLState: string(myErr.SQLState[:]), Message: myErr.Message})
		if myErr.Number == errNoSuchTable {
			errs = append(errs, store.ErrNotMigrated)
		}
	}
	if retryable(err) {
		errs = append(errs, ErrRetryable)
	}
	return sqlcore.Translated(err, errs, ErrOldServer, sqlcore.ErrInsertRace)
}
