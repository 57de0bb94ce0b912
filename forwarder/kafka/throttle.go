package kafka

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/forwarder"
)

var _ forwarder.ThrottleSource = (*Target)(nil)

// OnThrottle implements forwarder.ThrottleSource: fn is called with every
// throttle_time_ms a broker answers the target's clients with (a produce
// over the broker's quota), so the forwarder pauses the target instead of
// letting records wait behind the throttle until their send times out.
func (t *Target) OnThrottle(fn func(time.Duration)) { t.throttled.fn.Store(&fn) }

// throttleHook is the clients' kgo.HookBrokerThrottle.
type throttleHook struct {
	fn atomic.Pointer[func(time.Duration)]
}

var _ kgo.HookBrokerThrottle = (*throttleHook)(nil)

// OnBrokerThrottle implements kgo.HookBrokerThrottle. franz-go itself waits
// the throttle before its next request to that broker (KIP-219); this
// tells the forwarder, which holds new batches for that long too.
func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if fn := h.fn.Load(); fn != nil && d > 0 {
		(*fn)(d)
	}
}
