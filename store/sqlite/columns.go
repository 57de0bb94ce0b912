package sqlite

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Multi-row writes bind one value per row for the columns that vary in the
// batch, and a single value for a column whose values are all equal (a
// bizID, a timestamp, a zero counter: most columns of a typical batch):
// fewer parameters, so more rows per statement and fewer statements to
// parse.

// col is one column of a multi-row write, values already in driver form.
type col struct {
	name string
	vals []any
	same bool
}

func mkcol(name string, n int, get func(i int) any) col {
	c := col{name: name, vals: make([]any, n)}
	for i := range n {
		c.vals[i] = get(i)
	}
	if n == 0 {
		return c
	}
	c.same = true
	for _, v := range c.vals[1:] {
		if !eqDriver(c.vals[0], v) {
			c.same = false
			break
		}
	}
	return c
}

func eqDriver(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && bytes.Equal(ab, bb)
	}
	if _, ok := b.([]byte); ok {
		return false
	}
	return a == b
}

// split separates the constant columns from the varying ones (force keeps
// a column varying).
func split(cols []col, force string) (consts, vary []col) {
	for _, c := range cols {
		if c.same && c.name != force {
			consts = append(consts, c)
		} else {
			vary = append(vary, c)
		}
	}
	return consts, vary
}

func insertCols(ms []*state.Message) []col {
	n := len(ms)
	m := func(name string, get func(m *state.Message) any) col {
		return mkcol(name, n, func(i int) any { return get(ms[i]) })
	}
	return []col{
		m("biz_id", func(m *state.Message) any { return m.BizID }),
		m("message_key", func(m *state.Message) any { return m.Key }),
		m("partition", func(m *state.Message) any { return int64(m.Partition) }),
		m("status", func(m *state.Message) any { return int64(m.Status) }),
		m("has_body", func(m *state.Message) any { return m.HasBody }),
		m("payload", codec.PayloadArg),
		m("headers", codec.HeadersArg),
		m("target", func(m *state.Message) any { return m.Target }),
		m("topic", func(m *state.Message) any { return m.Topic }),
		m("forward_key", func(m *state.Message) any { return m.ForwardKey }),
		m("tag", func(m *state.Message) any { return m.Tag }),
		m("verify", func(m *state.Message) any { return m.Verify }),
		m("verify_attempts", func(m *state.Message) any { return int64(m.VerifyAttempts) }),
		m("verify_next_at", func(m *state.Message) any { return micro(m.VerifyNextAt) }),
		m("send_status", func(m *state.Message) any { return int64(m.SendStatus) }),
		m("send_attempts", func(m *state.Message) any { return int64(m.SendAttempts) }),
		m("send_next_at", func(m *state.Message) any { return micro(m.SendNextAt) }),
		m("send_ref", func(m *state.Message) any { return m.SendRef }),
		m("lease_token", func(m *state.Message) any { return m.LeaseToken }),
		m("last_error", func(m *state.Message) any { return m.LastError }),
		m("conflicts", func(m *state.Message) any { return int64(m.Conflicts) }),
		m("created_at", func(m *state.Message) any { return micro(m.CreatedAt) }),
		m("updated_at", func(m *state.Message) any { return micro(m.UpdatedAt) }),
		m("decided_at", func(m *state.Message) any { return micro(m.DecidedAt) }),
		m("sent_at", func(m *state.Message) any { return micro(m.SentAt) }),
		m("order_key", func(m *state.Message) any { return m.OrderKey }),
		m("order_seq", func(m *state.Message) any { return m.OrderSeq }),
		m("deliver_at", func(m *state.Message) any { return micro(m.DeliverAt) }),
	}
}

func updateCols(ms []*state.Message) []col {
	n := len(ms)
	m := func(name string, get func(m *state.Message) any) col {
		return mkcol(name, n, func(i int) any { return get(ms[i]) })
	}
	return []col{
		m("id", func(m *state.Message) any { return m.ID }),
		m("status", func(m *state.Message) any { return int64(m.Status) }),
		m("verify_attempts", func(m *state.Message) any { return int64(m.VerifyAttempts) }),
		m("verify_next_at", func(m *state.Message) any { return micro(m.VerifyNextAt) }),
		m("send_status", func(m *state.Message) any { return int64(m.SendStatus) }),
		m("send_attempts", func(m *state.Message) any { return int64(m.SendAttempts) }),
		m("send_next_at", func(m *state.Message) any { return micro(m.SendNextAt) }),
		m("send_ref", func(m *state.Message) any { return m.SendRef }),
		m("lease_token", func(m *state.Message) any { return m.LeaseToken }),
		m("last_error", func(m *state.Message) any { return m.LastError }),
		m("conflicts", func(m *state.Message) any { return int64(m.Conflicts) }),
		m("updated_at", func(m *state.Message) any { return micro(m.UpdatedAt) }),
		m("decided_at", func(m *state.Message) any { return micro(m.DecidedAt) }),
		m("sent_at", func(m *state.Message) any { return micro(m.SentAt) }),
		m("order_seq", func(m *state.Message) any { return m.OrderSeq }),
	}
}

// insertSQL returns "INSERT ... SELECT <constants and columnN> FROM (VALUES
// ...)" for rows rows, and fills args (constants first: they come first in
// the text, and anonymous parameters are numbered in text order).
func insertSQL(cols []col, lo, hi int, args []any) (string, []any) {
	consts, vary := split(cols, "message_key")
	idx := make(map[string]int, len(vary))
	for i, c := range vary {
		idx[c.name] = i + 1
	}
	names := make([]string, len(cols))
	exprs := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
		if k, ok := idx[c.name]; ok {
			exprs[i] = "column" + strconv.Itoa(k)
		} else {
			exprs[i] = "?"
		}
	}
	for _, c := range consts {
		args = append(args, c.vals[0])
	}
	for r := lo; r < hi; r++ {
		for _, c := range vary {
			args = append(args, c.vals[r])
		}
	}
	return `INSERT INTO eventcenter_messages (` + strings.Join(names, ", ") + `) SELECT ` + strings.Join(exprs, ", ") +
		` FROM (VALUES ` + sqlcore.Values(hi-lo, len(vary)) + `) RETURNING id, biz_id, message_key`, args
}

// updateSQL returns "WITH u(...) AS (VALUES ...) UPDATE ... SET" for rows lo
// to hi, and fills args (the rows first, then the constants of SET).
func updateSQL(cols []col, lo, hi int, args []any) (string, []any) {
	consts, vary := split(cols, "id")
	names := make([]string, len(vary))
	for i, c := range vary {
		names[i] = c.name
	}
	for r := lo; r < hi; r++ {
		for _, c := range vary {
			args = append(args, c.vals[r])
		}
	}
	var set []string
	for _, c := range vary[1:] {
		set = append(set, c.name+" = u."+c.name)
	}
	for _, c := range consts {
		set = append(set, c.name+" = ?")
		args = append(args, c.vals[0])
	}
	return `WITH u(` + strings.Join(names, ", ") + `) AS (VALUES ` + sqlcore.Values(hi-lo, len(vary)) + `)
		UPDATE eventcenter_messages SET ` + strings.Join(set, ", ") + ` FROM u WHERE eventcenter_messages.id = u.id`, args
}

// rowsPer is how many rows of varying columns fit in one statement.
func rowsPer(cols []col, force string) int {
	_, vary := split(cols, force)
	return max(1, (maxParams-len(cols))/len(vary))
}
