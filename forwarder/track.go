package forwarder

import "sync"

// tracker knows the messages queued or in flight, by id, with the newest
// lease token seen for each. A message handed over or claimed again while it
// is still here is not queued twice; its result is recorded with the newest
// token (a scan may re-claim a message whose lease ran out while it waited in
// a slow target's queue).
type tracker struct {
	mu sync.Mutex
	m  map[int64]int64
}

// add tells whether the message is new (to be queued); for a known one it
// only keeps the newer lease token.
func (t *tracker) add(id, token int64) bool {
	if id == 0 {
		return true // not from a store; cannot be tracked
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[int64]int64)
	}
	if _, ok := t.m[id]; ok {
		t.m[id] = token
		return false
	}
	t.m[id] = token
	return true
}

// done forgets the message and returns its newest lease token (0 if it was
// not tracked).
func (t *tracker) done(id int64) int64 {
	if id == 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tok := t.m[id]
	delete(t.m, id)
	return tok
}
