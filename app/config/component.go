package config

import (
	"regexp"
	"strings"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// fieldPaths maps a component's Config fields (Go names) to the settings
// that set them (YAML paths).
type fieldPaths map[string]string

// goField matches a Go field name in a component's message.
var goField = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// report passes on the problems of a component's Validate under the
// settings' names, so that the component stays the one home of its
// limits: a problem of Brokers[2] is kafka.brokers[2], and Go field
// names in its text are renamed too. A problem of a field paths does not
// name (one no setting reaches) or an error that is no fieldcheck.Problem
// is reported under section as it is.
func (paths fieldPaths) report(section string, err error, bad func(string, string, ...any)) {
	problems, others := fieldcheck.Problems(err)
	for _, p := range problems {
		name, index, _ := strings.Cut(p.Field, "[")
		path, ok := paths[name]
		switch {
		case !ok:
			path = section + " (" + p.Field + ")"
		case index != "":
			path += "[" + index
		}
		bad(path, "%s", goField.ReplaceAllStringFunc(p.Text, func(w string) string {
			if path, ok := paths[w]; ok {
				return path
			}
			return w
		}))
	}
	for _, e := range others {
		bad(section, "%v", e)
	}
}
