package forwarder

import "sync"

// ownedView caches the owned partitions as a set and refreshes it when the
// set changes, so a worker can check each message without a slice per batch.
type ownedView struct {
	owned Owned

	mu  sync.Mutex
	ch  <-chan struct{}
	set map[int32]struct{}
}

// snapshot returns the current owned set. The map is never modified after
// it is returned.
func (v *ownedView) snapshot() map[int32]struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ch != nil {
		select {
		case <-v.ch:
		default:
			return v.set
		}
	}
	// Take the channel before reading: a change in between closes it and
	// the next snapshot reads again.
	v.ch = v.owned.Changed()
	parts := v.owned.Partitions()
	set := make(map[int32]struct{}, len(parts))
	for _, p := range parts {
		set[p] = struct{}{}
	}
	v.set = set
	return set
}
