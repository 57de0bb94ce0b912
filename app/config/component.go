package config

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// fieldPaths maps a component's Config fields (Go names, as its
// problems name them: "Lease", "Backoff.Base", `BizIDs["a"].Timeout`) to
// the settings that set them (YAML paths).
type fieldPaths map[string]string

// notASetting marks a field no setting reaches that the center fills (a
// forwarder's Targets): its problems are the center's to report, when the
// component is made.
const notASetting = "-"

// reportedAs marks a field whose setting another section reports the
// problems of (producerapi's MaxPayload is ingest.max_payload_bytes,
// checked by ingest's Validate): its own problems are left out, so that a
// bad setting is reported once, and the texts of the others name the
// setting.
func reportedAs(path string) string { return reportedMark + path }

const reportedMark = "="

// goField matches a field in a component's message: a Go name, with its
// elements ([2], ["a"]) and subfields (.Base).
var goField = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*(?:\[[^\]\s]*\])?(?:\.[A-Z][A-Za-z0-9]*(?:\[[^\]\s]*\])?)*`)

// path returns the setting of a component's field: the field's own, or
// for an element (Brokers[2]) its list's with the index.
func (paths fieldPaths) path(field string) (string, bool) {
	if p, ok := paths[field]; ok {
		return p, true
	}
	if i := strings.LastIndex(field, "["); i > 0 && strings.HasSuffix(field, "]") {
		if p, ok := paths[field[:i]]; ok {
			return p + field[i:], true
		}
	}
	return "", false
}

// withEntries returns paths with the fields of a list of per-bizID
// entries, which the component keys by bizID (goList["a"]) and the
// settings by index (yamlList[i]): goList["a"].Field is
// yamlList[i].setting for each Field → setting of fields, and a problem
// of the entry itself (its bizID) is yamlList[i].biz_id.
func (paths fieldPaths) withEntries(goList, yamlList string, ids []string, fields map[string]string) fieldPaths {
	out := maps.Clone(paths)
	for i, id := range ids {
		entry := fmt.Sprintf("%s[%q]", goList, id)
		out[entry] = fmt.Sprintf("%s[%d].biz_id", yamlList, i)
		for field, setting := range fields {
			out[entry+"."+field] = fmt.Sprintf("%s[%d].%s", yamlList, i, setting)
		}
	}
	return out
}

// report passes on the problems of a component's Validate under the
// settings' names, so that the component stays the one home of its
// limits: a problem of Brokers[2] is kafka.brokers[2], and the fields its
// text names are renamed too. A problem of a field paths does not name
// (one no setting reaches) or an error that is no fieldcheck.Problem is
// reported under section as it is; one of a field notASetting marks is
// left to the center, and one of a field reportedAs marks to the other
// section.
func (paths fieldPaths) report(section string, err error, bad func(string, string, ...any)) {
	problems, others := fieldcheck.Problems(err)
	for _, p := range problems {
		path, ok := paths.path(p.Field)
		switch {
		case path == notASetting, strings.HasPrefix(path, reportedMark):
			continue
		case !ok:
			path = section + " (" + p.Field + ")"
		}
		bad(path, "%s", goField.ReplaceAllStringFunc(p.Text, func(w string) string {
			if path, ok := paths.path(w); ok && path != notASetting {
				return strings.TrimPrefix(path, reportedMark)
			}
			return w
		}))
	}
	for _, e := range others {
		bad(section, "%v", e)
	}
}
