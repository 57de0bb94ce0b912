package postgres

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// Multi-row writes send one array per column and unnest them. A column
// whose values are all equal in the batch (a bizID, a timestamp, a zero
// counter: most columns of a typical batch) is sent once, as a scalar,
// instead: less to encode, to send, and for PostgreSQL to unnest.

// col is one column of a multi-row write.
type col struct {
	name, typ string
	arr       any // the typed slice
	one       any // the single value, when same
	same      bool
	// minusOneIsNull: -1 stands for NULL (nullable integers sent as plain
	// arrays, which encode faster than arrays of pgtype values).
	minusOneIsNull bool
}

func mkcol[T any](name, typ string, vals []T, eq func(a, b T) bool) col {
	c := col{name: name, typ: typ, arr: vals}
	if len(vals) == 0 {
		return c
	}
	c.same = true
	for _, v := range vals[1:] {
		if !eq(vals[0], v) {
			c.same = false
			break
		}
	}
	if c.same {
		c.one = vals[0]
	}
	return c
}

func eqv[T comparable](a, b T) bool { return a == b }

func eqTS(a, b pgtype.Timestamptz) bool { return a.Valid == b.Valid && a.Time.Equal(b.Time) }

func eqBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// rowSource turns columns into parameters: arrays unnested as u(...), or
// scalars; expr says how the statement reads each column.
type rowSource struct {
	args   []any
	unnest []string
	names  []string
	expr   map[string]string
}

func newRowSource() *rowSource { return &rowSource{expr: map[string]string{}} }

// add adds c; forceArray keeps it an array (one column must be, for unnest
// to produce the rows).
func (r *rowSource) add(c col, forceArray bool) {
	n := len(r.args) + 1
	if c.same && !forceArray {
		r.args = append(r.args, c.one)
		r.expr[c.name] = fmt.Sprintf("$%d::%s", n, c.typ)
	} else {
		r.args = append(r.args, c.arr)
		r.unnest = append(r.unnest, fmt.Sprintf("$%d::%s[]", n, c.typ))
		r.names = append(r.names, c.name)
		r.expr[c.name] = "u." + c.name
	}
	if c.minusOneIsNull {
		r.expr[c.name] = "nullif(" + r.expr[c.name] + ", -1)"
	}
}

func (r *rowSource) from() string {
	return "unnest(" + strings.Join(r.unnest, ", ") + ") AS u(" + strings.Join(r.names, ", ") + ")"
}

func payloadOf(m *state.Message) []byte {
	if m.Payload == nil && m.HasBody {
		return []byte{}
	}
	return m.Payload
}

func column[T any](ms []*state.Message, name, typ string, get func(m *state.Message) T, eq func(a, b T) bool) col {
	vals := make([]T, len(ms))
	for i, m := range ms {
		vals[i] = get(m)
	}
	return mkcol(name, typ, vals, eq)
}

func tsColumn(ms []*state.Message, name string, get func(m *state.Message) pgtype.Timestamptz) col {
	return column(ms, name, "timestamptz", get, eqTS)
}

// insertStmt returns the INSERT ... ON CONFLICT DO NOTHING RETURNING of ms.
func insertStmt(ms []*state.Message) (string, []any) {
	cols := []col{
		column(ms, "biz_id", "text", func(m *state.Message) string { return m.BizID }, eqv),
		column(ms, "message_key", "text", func(m *state.Message) string { return m.Key }, eqv),
		column(ms, "partition", "int", func(m *state.Message) int32 { return m.Partition }, eqv),
		column(ms, "status", "smallint", func(m *state.Message) int16 { return int16(m.Status) }, eqv),
		column(ms, "has_body", "bool", func(m *state.Message) bool { return m.HasBody }, eqv),
		column(ms, "payload", "bytea", payloadOf, eqBytes),
		column(ms, "headers", "bytea", func(m *state.Message) []byte { return codec.EncodeHeaders(m.Headers) }, eqBytes),
		column(ms, "target", "text", func(m *state.Message) string { return m.Target }, eqv),
		column(ms, "topic", "text", func(m *state.Message) string { return m.Topic }, eqv),
		column(ms, "forward_key", "text", func(m *state.Message) string { return m.ForwardKey }, eqv),
		column(ms, "tag", "text", func(m *state.Message) string { return m.Tag }, eqv),
		column(ms, "verify", "text", func(m *state.Message) string { return m.Verify }, eqv),
		column(ms, "verify_attempts", "int", func(m *state.Message) int32 { return int32(m.VerifyAttempts) }, eqv),
		tsColumn(ms, "verify_next_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.VerifyNextAt) }),
		column(ms, "send_status", "smallint", func(m *state.Message) int16 { return int16(m.SendStatus) }, eqv),
		column(ms, "send_attempts", "int", func(m *state.Message) int32 { return int32(m.SendAttempts) }, eqv),
		tsColumn(ms, "send_next_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.SendNextAt) }),
		column(ms, "send_ref", "text", func(m *state.Message) string { return m.SendRef }, eqv),
		column(ms, "lease_token", "bigint", func(m *state.Message) int64 { return m.LeaseToken }, eqv),
		column(ms, "last_error", "text", func(m *state.Message) string { return m.LastError }, eqv),
		column(ms, "conflicts", "int", func(m *state.Message) int32 { return int32(m.Conflicts) }, eqv),
		tsColumn(ms, "created_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.CreatedAt) }),
		tsColumn(ms, "updated_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.UpdatedAt) }),
		tsColumn(ms, "decided_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.DecidedAt) }),
		tsColumn(ms, "sent_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.SentAt) }),
		column(ms, "order_key", "text", func(m *state.Message) string { return m.OrderKey }, eqv),
		column(ms, "order_seq", "bigint", func(m *state.Message) int64 { return m.OrderSeq }, eqv),
		tsColumn(ms, "deliver_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.DeliverAt) }),
	}
	cols = append(cols, aheadColumns(ms)...)
	r := newRowSource()
	names := make([]string, len(cols))
	exprs := make([]string, len(cols))
	for i, c := range cols {
		r.add(c, c.name == "message_key")
		names[i], exprs[i] = c.name, r.expr[c.name]
	}
	return `INSERT INTO eventcenter_messages (` + strings.Join(names, ", ") + `)
	SELECT ` + strings.Join(exprs, ", ") + ` FROM ` + r.from() + `
	ON CONFLICT (biz_id, message_key) DO NOTHING
	RETURNING id, biz_id, message_key`, r.args
}

// updateStmt returns the UPDATE of ms: the columns that change after
// insert, and the body columns only in a batch where some row received its
// body after its decision.
func updateStmt(ms []*state.Message, loaded map[store.MessageRef]*state.Message) (string, []any) {
	setBody := make([]bool, len(ms))
	withBody := false
	for i, m := range ms {
		if old := loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}]; m.HasBody && (old == nil || !old.HasBody) {
			setBody[i], withBody = true, true
		}
	}
	cols := []col{
		column(ms, "id", "bigint", func(m *state.Message) int64 { return m.ID }, eqv),
		column(ms, "status", "smallint", func(m *state.Message) int16 { return int16(m.Status) }, eqv),
		column(ms, "verify_attempts", "int", func(m *state.Message) int32 { return int32(m.VerifyAttempts) }, eqv),
		tsColumn(ms, "verify_next_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.VerifyNextAt) }),
		column(ms, "send_status", "smallint", func(m *state.Message) int16 { return int16(m.SendStatus) }, eqv),
		column(ms, "send_attempts", "int", func(m *state.Message) int32 { return int32(m.SendAttempts) }, eqv),
		tsColumn(ms, "send_next_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.SendNextAt) }),
		column(ms, "send_ref", "text", func(m *state.Message) string { return m.SendRef }, eqv),
		column(ms, "lease_token", "bigint", func(m *state.Message) int64 { return m.LeaseToken }, eqv),
		column(ms, "last_error", "text", func(m *state.Message) string { return m.LastError }, eqv),
		column(ms, "conflicts", "int", func(m *state.Message) int32 { return int32(m.Conflicts) }, eqv),
		tsColumn(ms, "updated_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.UpdatedAt) }),
		tsColumn(ms, "decided_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.DecidedAt) }),
		tsColumn(ms, "sent_at", func(m *state.Message) pgtype.Timestamptz { return ts(m.SentAt) }),
		column(ms, "order_seq", "bigint", func(m *state.Message) int64 { return m.OrderSeq }, eqv),
	}
	cols = append(cols, aheadColumns(ms)...)
	var bodyCols []col
	if withBody {
		body := func(name, typ string, get func(m *state.Message) string) col {
			return column(ms, name, typ, func(m *state.Message) string {
				if m.HasBody {
					return get(m)
				}
				return ""
			}, eqv)
		}
		bodyCols = []col{
			mkcol("set_body", "bool", setBody, eqv),
			column(ms, "payload", "bytea", payloadOf, eqBytes),
			column(ms, "headers", "bytea", func(m *state.Message) []byte { return codec.EncodeHeaders(m.Headers) }, eqBytes),
			body("target", "text", func(m *state.Message) string { return m.Target }),
			body("topic", "text", func(m *state.Message) string { return m.Topic }),
			body("forward_key", "text", func(m *state.Message) string { return m.ForwardKey }),
			body("tag", "text", func(m *state.Message) string { return m.Tag }),
			body("verify", "text", func(m *state.Message) string { return m.Verify }),
			body("order_key", "text", func(m *state.Message) string { return m.OrderKey }),
			tsColumn(ms, "deliver_at", func(m *state.Message) pgtype.Timestamptz {
				if m.HasBody {
					return ts(m.DeliverAt)
				}
				return pgtype.Timestamptz{}
			}),
		}
	}
	r := newRowSource()
	var set []string
	for _, c := range cols {
		r.add(c, c.name == "id")
		if c.name != "id" {
			set = append(set, c.name+" = "+r.expr[c.name])
		}
	}
	if withBody {
		for _, c := range bodyCols {
			r.add(c, false)
		}
		sb := r.expr["set_body"]
		set = append(set, "has_body = m.has_body OR "+sb)
		for _, c := range bodyCols[1:] {
			set = append(set, fmt.Sprintf("%s = CASE WHEN %s THEN %s ELSE m.%s END", c.name, sb, r.expr[c.name], c.name))
		}
	}
	return `UPDATE eventcenter_messages AS m SET ` + strings.Join(set, ", ") + `
	FROM ` + r.from() + ` WHERE m.id = u.id`, r.args
}
