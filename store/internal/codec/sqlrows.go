package codec

import (
	"database/sql"

	"github.com/eventcenter/eventcenter/state"
)

// ScanAll reads every row of rows with scan (a driver's column mapping)
// and closes rows; the database/sql drivers (mysql, sqlite) share it.
func ScanAll(rows *sql.Rows, scan func(*sql.Rows) (state.Message, error)) ([]state.Message, error) {
	defer rows.Close()
	var ms []state.Message
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

// PayloadArg is a message's payload as a statement argument: NULL when the
// message has none.
func PayloadArg(m *state.Message) any {
	if m.Payload == nil {
		return nil
	}
	return m.Payload
}

// HeadersArg is a message's forwarded headers, encoded, as a statement
// argument: NULL when there are none.
func HeadersArg(m *state.Message) any {
	if h := EncodeHeaders(m.Headers); h != nil {
		return h
	}
	return nil
}
