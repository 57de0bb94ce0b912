package checkback

// Decision is a producer's answer to a check-back.
type Decision uint8

const (
	// DecisionUnknown: the local transaction is not decided yet, or its
	// outcome cannot be told, or the answer could not be read; the center
	// asks again later. It is the zero value, so a forgotten return never
	// commits.
	DecisionUnknown Decision = iota
	// DecisionCommit: the local transaction committed; the message is sent.
	DecisionCommit
	// DecisionRollback: it rolled back; the message is dropped.
	DecisionRollback
)

// String returns commit, rollback or unknown.
func (d Decision) String() string {
	switch d {
	case DecisionCommit:
		return "commit"
	case DecisionRollback:
		return "rollback"
	default:
		return "unknown"
	}
}

// Status is TrustMessage's messageStatus for d: 2 commit, 3 rollback,
// 1 unknown (still prepared); any unexpected Decision answers 1.
func (d Decision) Status() int {
	switch d {
	case DecisionCommit:
		return 2
	case DecisionRollback:
		return 3
	default:
		return 1
	}
}
