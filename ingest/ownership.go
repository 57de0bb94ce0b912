package ingest

import (
	"slices"
	"sync"
)

// Ownership is the set of control-topic partitions this instance owns, as
// store partitions (lane.go): one set for every control lane.
// Ingest decides it: it changes the set on assignment and revocation (the
// consumer group is ingest's). The verifier and the forwarder read it before
// every claim, through the small Owned interfaces they declare, and wake up
// when it changes, so they act only on owned partitions and pick up new ones
// at once. The zero value is not usable; use NewOwnership.
type Ownership struct {
	mu      sync.Mutex
	parts   map[int32]struct{}
	changed chan struct{}
}

// NewOwnership returns an empty set.
func NewOwnership() *Ownership {
	return &Ownership{parts: map[int32]struct{}{}, changed: make(chan struct{})}
}

// Partitions returns the owned partitions, sorted.
func (s *Ownership) Partitions() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int32, 0, len(s.parts))
	for p := range s.parts {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Len is how many partitions are owned.
func (s *Ownership) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts)
}

// Owns tells whether p is owned.
func (s *Ownership) Owns(p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts[p]
	return ok
}

// Changed returns a channel closed at the next change of the set.
func (s *Ownership) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Assign adds partitions.
func (s *Ownership) Assign(parts ...int32) { s.update(parts, true) }

// Revoke removes partitions.
func (s *Ownership) Revoke(parts ...int32) { s.update(parts, false) }

func (s *Ownership) update(parts []int32, add bool) {
	if len(parts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		if add {
			s.parts[p] = struct{}{}
		} else {
			delete(s.parts, p)
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}
