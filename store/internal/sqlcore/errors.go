package sqlcore

import (
	"context"
	"errors"

	"github.com/eventcenter/eventcenter/store"
)

// translated keeps a driver error's text but only our or the standard
// library's errors in its chain.
type translated struct {
	msg  string
	errs []error
}

func (t *translated) Error() string   { return t.msg }
func (t *translated) Unwrap() []error { return t.errs }

// Translated returns an error with err's text whose chain holds errs (what
// a driver made of its own error types) and, of context.Canceled,
// context.DeadlineExceeded, store.ErrNotMigrated and sentinels, those err
// wraps: no driver type stays reachable, and a cancelled or expired
// context stays errors.Is-comparable. nil stays nil.
func Translated(err error, errs []error, sentinels ...error) error {
	if err == nil {
		return nil
	}
	for _, e := range append([]error{context.Canceled, context.DeadlineExceeded, store.ErrNotMigrated}, sentinels...) {
		if errors.Is(err, e) {
			errs = append(errs, e)
		}
	}
	return &translated{msg: err.Error(), errs: errs}
}
