package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/eventcenter/eventcenter/state"
)

// The retry-now rule: which rows an operator's RetryNowBizID acts on. It is
// the set of messages state.Apply accepts a state.KindRetryNow for — a
// PREPARE waiting for its check-back, a message whose check-back gave up
// (VERIFY_FAILED), or a committed message with a body that is not yet sent
// (pending or dead). Drivers select with RetryNowWhere and fold the rows with
// Fold, so the SQL filter and the state machine cannot drift apart; the test
// next to this file checks RetryNowEligible against state.Apply.
var (
	// RetryNowStatuses are the statuses retried whatever their send status.
	RetryNowStatuses = []state.Status{state.Prepared, state.VerifyFailed}
	// RetryNowSendStatuses are the send statuses of a committed message
	// with a body that a retry makes sendable again.
	RetryNowSendStatuses = []state.SendStatus{state.SendPending, state.SendDead}
)

// RetryNowEligible tells whether m is one RetryNowBizID acts on.
func RetryNowEligible(m *state.Message) bool {
	for _, s := range RetryNowStatuses {
		if m.Status == s {
			return true
		}
	}
	if m.Status != state.Committed || !m.HasBody {
		return false
	}
	for _, s := range RetryNowSendStatuses {
		if m.SendStatus == s {
			return true
		}
	}
	return false
}

// RetryNowWhere renders the retry-now rule as a SQL condition over the
// eventcenter_messages columns status, has_body and send_status. hasBody is
// the dialect's true test of the has_body column ("has_body" where it is a
// boolean, "has_body = 1" where it is an integer).
func RetryNowWhere(hasBody string) string {
	return fmt.Sprintf("(status IN (%s) OR (status = %d AND %s AND send_status IN (%s)))",
		sqlList(RetryNowStatuses), state.Committed, hasBody, sqlList(RetryNowSendStatuses))
}

// sqlList renders integer codes as a SQL list: "1, 4".
func sqlList[T ~int16](codes []T) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = strconv.Itoa(int(c))
	}
	return strings.Join(s, ", ")
}
