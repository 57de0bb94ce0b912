package fieldcheck

import (
	"errors"
	"fmt"
)

// Problem is one bad field of a configuration: the field as the component
// names it (its Go field, "Brokers[2]" for an element) and what is wrong.
type Problem struct {
	Field string
	Text  string
}

func (p *Problem) Error() string { return p.Field + ": " + p.Text }

// Checker collects the problems of one Validate call. Its zero value is
// ready; Prefix, when set, starts every message ("ingest config"), as
// "ingest config: MaxPayload: must be ...".
type Checker struct {
	Prefix string
	errs   []error
}

// Bad records that field is bad, saying why.
func (c *Checker) Bad(field, format string, args ...any) {
	var err error = &Problem{Field: field, Text: fmt.Sprintf(format, args...)}
	if c.Prefix != "" {
		err = fmt.Errorf("%s: %w", c.Prefix, err)
	}
	c.errs = append(c.errs, err)
}

// Err returns every recorded problem joined, or nil.
func (c *Checker) Err() error { return errors.Join(c.errs...) }

// Problems returns the problems in err's tree, in order, and the errors
// of the tree that hold none (from a check that does not name its field),
// whole.
func Problems(err error) (problems []*Problem, others []error) {
	var walk func(error)
	walk = func(err error) {
		var p *Problem
		switch u := err.(type) { //nolint:errorlint // walks the tree itself, joined errors included
		case *Problem:
			problems = append(problems, u)
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		default:
			if !errors.As(err, &p) {
				others = append(others, err)
			} else if inner := errors.Unwrap(err); inner != nil {
				walk(inner)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return problems, others
}
