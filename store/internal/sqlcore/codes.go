package sqlcore

import (
	"strconv"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// The state codes as SQL literals, from the state package: the one place
// the statements take them from.
var (
	Prepared    = lit(state.Prepared)
	Committed   = lit(state.Committed)
	RolledBack  = lit(state.RolledBack)
	SendPending = lit(state.SendPending)
	SendSent    = lit(state.SendSent)
	SendDead    = lit(state.SendDead)
)

func lit[T ~int16](c T) string { return strconv.Itoa(int(c)) }

// PendingSend is "a committed message with a body, not sent yet" (what
// state.Message.Sendable tests, and what the send index holds), with
// hasBody the dialect's true test of the has_body column.
func PendingSend(hasBody string) string {
	return "status = " + Committed + " AND send_status = " + SendPending + " AND " + hasBody
}

// IsPrepared is "status = <PREPARED>".
func IsPrepared() string { return "status = " + Prepared }

// IsOrphan is "a COMMITTED message without a body" (state.Message.Orphan),
// with noBody the dialect's false test of the has_body column.
func IsOrphan(noBody string) string { return "status = " + Committed + " AND " + noBody }

// PurgeRolledBack and PurgeSent are the two kinds of terminal message
// Purge deletes, decided or sent before the parameter before.
func PurgeRolledBack(before string) string {
	return "status = " + RolledBack + " AND decided_at < " + before
}

// PurgeSent is PurgeRolledBack for sent messages.
func PurgeSent(before string) string {
	return "status = " + Committed + " AND send_status = " + SendSent + " AND sent_at < " + before
}

// MarkSentSet is the SET list of a sent mark (state.KindSent for many
// rows): sent at the parameter at, with the reference ref (an expression),
// and the last error cleared (see store.Fold: a message that moved on keeps
// no stale error).
func MarkSentSet(col func(string) string, at, ref string) string {
	return col("send_status") + " = " + SendSent + ", " + col("sent_at") + " = " + at + ", " +
		col("updated_at") + " = " + at + ", " + col("send_ref") + " = " + ref + ", " + col("last_error") + " = ''"
}

// Plain names a column as it is.
func Plain(c string) string { return c }

// RetryNowWhere is store.RetryNowWhere, for the drivers' statements.
var RetryNowWhere = store.RetryNowWhere
