// Package ownership holds the set of control-topic partitions this instance
// owns. Ingest changes it on assignment and revocation; the verifier and the
// forwarder read it before every claim and wake up when it changes, so they
// act only on owned partitions and pick up new ones at once.
package ownership

import (
	"slices"
	"sync"
)

// Set is the owned partitions. The zero value is not usable; use New.
type Set struct {
	mu      sync.Mutex
	parts   map[int32]struct{}
	changed chan struct{}
}

// New returns an empty set.
func New() *Set {
	return &Set{parts: map[int32]struct{}{}, changed: make(chan struct{})}
}

// Partitions returns the owned partitions, sorted.
func (s *Set) Partitions() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int32, 0, len(s.parts))
	for p := range s.parts {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Owns tells whether p is owned.
func (s *Set) Owns(p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts[p]
	return ok
}

// Changed returns a channel closed at the next change of the set.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Assign adds partitions.
func (s *Set) Assign(parts ...int32) { s.update(parts, true) }

// Revoke removes partitions.
func (s *Set) Revoke(parts ...int32) { s.update(parts, false) }

func (s *Set) update(parts []int32, add bool) {
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
