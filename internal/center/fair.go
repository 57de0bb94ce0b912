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
