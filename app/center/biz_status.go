package center

import "github.com/eventcenter/eventcenter/admin/adminapi"

// bizForwarding is the forwarder's per-bizID view for the admin handler.
func (c *Center) bizForwarding() []adminapi.BizForwarding {
	st := c.Forwarder.BizStatus()
	out := make([]adminapi.BizForwarding, len(st))
	for i, s := range st {
		out[i] = adminapi.BizForwarding{
			BizID: s.BizID, Configured: s.Configured, Weight: max(1, s.Limits.Weight),
			Rate: s.Limits.Rate, Burst: s.Limits.Burst, MaxInFlight: s.Limits.MaxInFlight,
			InFlight: s.InFlight, SendRate: s.SendRate, Throttled: s.Throttled,
		}
	}
	return out
}

// bizCheckbacks is the verifier's per-bizID view for the admin handler.
func (c *Center) bizCheckbacks() map[string]adminapi.BizCheckback {
	st := c.Verifier.BizStatus()
	out := make(map[string]adminapi.BizCheckback, len(st))
	for _, s := range st {
		out[s.BizID] = adminapi.BizCheckback{
			CheckbackWeight: s.Weight, CheckbackRate: s.Rate, CheckbackBurst: s.Burst, CheckbackWorkers: s.Workers,
			CheckbackWaiting: s.Waiting, CheckbackRunning: s.Running, CheckbackThrottled: s.Throttled,
		}
	}
	return out
}

// targetThrottles is the forwarder's per-target throttle for the admin
// handler.
func (c *Center) targetThrottles() []adminapi.TargetThrottle {
	st := c.Forwarder.TargetStatus()
	out := make([]adminapi.TargetThrottle, len(st))
	for i, s := range st {
		out[i] = adminapi.TargetThrottle{
			Target: s.Target, Paused: s.Paused, RemainingSeconds: s.Left.Seconds(),
			Cause: s.Cause, PauseSeconds: s.Pause.Seconds(),
		}
		if !s.Since.IsZero() {
			t := s.Since.UTC()
			out[i].Since = &t
		}
	}
	return out
}
