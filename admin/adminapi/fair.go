package adminapi

import "time"

// BizForwarding is one bizID's share of this center's forwarder (issue 28):
// its settings (forward.biz[]) and what the forwarder sees. The center
// gives it to the admin handler (admin.Config.Forwarding).
type BizForwarding struct {
	BizID string `json:"biz_id"`
	// Configured tells whether forward.biz names the bizID; if not, the
	// settings are the defaults (weight 1, no limit).
	Configured bool `json:"configured"`
	// Weight is its share of the fair claims.
	Weight int `json:"weight"`
	// Rate (messages/s, 0: none) and Burst are its rate limit;
	// MaxInFlight (0: none) caps its messages queued or being sent.
	Rate        float64 `json:"rate,omitempty"`
	Burst       int     `json:"burst,omitempty"`
	MaxInFlight int     `json:"max_in_flight,omitempty"`
	// InFlight are its messages queued or being sent by this center.
	InFlight int `json:"in_flight"`
	// SendRate is its messages sent per second over the last 10s, by this
	// center.
	SendRate float64 `json:"send_rate"`
	// Throttled names the limits that held its messages back in the last
	// 5s ("rate", "max_in_flight"); empty when none.
	Throttled []string `json:"throttled"`
}

// BizShare is one bizID's row of GET /api/v1/bizids: its send backlog
// from the store (every center's) and its share of this center's
// forwarder.
type BizShare struct {
	BizForwarding
	// Backlog counts its committed messages not sent yet (due, being
	// sent, scheduled or waiting for a retry).
	Backlog int64 `json:"backlog"`
	// Due counts those due and not claimed: waiting for their turn or
	// held by a limit.
	Due int64 `json:"due"`
	// OldestDue is when the oldest of those fell due (absent: none), and
	// OldestDueAge how long ago, in seconds.
	OldestDue    *time.Time `json:"oldest_due,omitempty"`
	OldestDueAge float64    `json:"oldest_due_age_seconds"`
}

// BizShares is GET /api/v1/bizids: the fair-share view, by bizID.
type BizShares struct {
	BizIDs []BizShare `json:"biz_ids"`
}
