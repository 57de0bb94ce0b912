package forwarder

import (
	"sync"
	"time"
)

// tracker knows the messages queued or in flight, by id, with the newest
// lease token seen for each. A message handed over or claimed again while it
// is still here is not queued twice; its result is recorded with the newest
// token (a scan may re-claim a message whose lease ran out while it waited in
// a slow target's queue). It counts them per bizID (BizLimits.MaxInFlight).
type tracker struct {
	mu    sync.Mutex
	m     map[int64]tracked
	byBiz map[string]int
}

type tracked struct {
	token int64
	biz   string
	// until is when the newest lease runs out (zero: not leased, or not
	// known); past it another instance may claim and send the message.
	until time.Time
}

// add tells whether the message is new (to be queued); for a known one it
// only keeps the newer lease token and its end (until).
func (t *tracker) add(id, token int64, biz string, until time.Time) bool {
	if id == 0 {
		return true // not from a store; cannot be tracked
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[int64]tracked)
		t.byBiz = make(map[string]int)
	}
	if x, ok := t.m[id]; ok {
		x.token, x.until = token, until
		t.m[id] = x
		return false
	}
	t.m[id] = tracked{token: token, biz: biz, until: until}
	t.byBiz[biz]++
	return true
}

// until returns when the newest lease of a tracked message runs out (zero
// when it is not tracked or not leased).
func (t *tracker) until(id int64) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id].until
}

// done forgets the message and returns its newest lease token (0 if it was
// not tracked).
func (t *tracker) done(id int64) int64 {
	if id == 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.m[id]
	if !ok {
		return 0
	}
	delete(t.m, id)
	if t.byBiz[x.biz]--; t.byBiz[x.biz] <= 0 {
		delete(t.byBiz, x.biz)
	}
	return x.token
}

// count returns how many messages of biz are tracked.
func (t *tracker) count(biz string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byBiz[biz]
}

// counts returns how many messages are tracked per bizID.
func (t *tracker) counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.byBiz))
	for b, n := range t.byBiz {
		out[b] = n
	}
	return out
}
