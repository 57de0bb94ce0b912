package adminapi

import "time"

// BizForwarding is one bizID's share of this center's forwarder (so that one bizID's flood does not starve the others):
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

// BizCheckback is one bizID's share of this center's check-backs (issue
// 28): its settings (checkback.biz[], checkback.biz_workers) and what
// the verifier holds. The center gives it to the admin handler
// (admin.Config.Checkbacks). Fields are prefixed checkback_ in the JSON,
// beside the forward ones.
type BizCheckback struct {
	// CheckbackWeight is its share of the check-back claims and workers.
	CheckbackWeight int `json:"checkback_weight"`
	// CheckbackRate (check-backs/s, 0: none) and CheckbackBurst are its
	// rate limit; CheckbackWorkers the most calls it may have running
	// (fewer while other bizIDs wait: its weighted share).
	CheckbackRate    float64 `json:"checkback_rate,omitempty"`
	CheckbackBurst   int     `json:"checkback_burst,omitempty"`
	CheckbackWorkers int     `json:"checkback_workers"`
	// CheckbackWaiting are its claimed check-backs waiting in this
	// center's memory for a worker or a limit; CheckbackRunning its calls
	// under way.
	CheckbackWaiting int `json:"checkback_waiting"`
	CheckbackRunning int `json:"checkback_running"`
	// CheckbackThrottled names the limit holding its check-backs back now
	// ("rate": checkback.biz[].rate, "workers": its worker cap); empty
	// when none.
	CheckbackThrottled []string `json:"checkback_throttled"`
}

// TargetThrottle is a forward target's pause asked for by its broker
// (docs/fairness.md), in GET /api/v1/bizids.
type TargetThrottle struct {
	Target string `json:"target"`
	// Paused tells whether its sends are paused now; RemainingSeconds
	// how long for still.
	Paused           bool    `json:"paused"`
	RemainingSeconds float64 `json:"remaining_seconds"`
	// Cause is why it last paused: "broker_throttle" (Kafka
	// throttle_time_ms) or "busy" (RocketMQ SYSTEM_BUSY); absent when it
	// never did. PauseSeconds is that pause's length, Since when it began.
	Cause        string     `json:"cause,omitempty"`
	PauseSeconds float64    `json:"pause_seconds"`
	Since        *time.Time `json:"since,omitempty"`
}

// BizShare is one bizID's row of GET /api/v1/bizids: its send backlog
// from the store (every center's), its share of this center's forwarder
// and of its check-backs.
type BizShare struct {
	BizForwarding
	BizCheckback
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

// BizShares is GET /api/v1/bizids: the fair-share view, by bizID, a page
// at a time (query limit, at most and by default the handler's list page
// limit, 1000; after, the last bizID of the page before).
type BizShares struct {
	BizIDs []BizShare `json:"biz_ids"`
	// Next, when set, is the after of the next page: more bizIDs follow.
	Next string `json:"next,omitempty"`
	// Targets are this center's forward targets and their broker
	// throttles.
	Targets []TargetThrottle `json:"targets"`
}
