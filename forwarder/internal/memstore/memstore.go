package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Store keeps rows in memory. Leases work as in the real stores: a claim
// moves SendNextAt to now+lease and sets a fresh LeaseToken.
type Store struct {
	mu    sync.Mutex
	now   func() time.Time
	rows  map[store.MessageRef]*state.Message
	ids   int64
	token int64

	markCalls, applyCalls, claimCalls int
	markErrs, applyErrs, claimErrs    []error
}

// New returns an empty store using the clock now (nil means time.Now).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, rows: map[store.MessageRef]*state.Message{}}
}

// FailMarkSent makes the next MarkSent calls fail with errs, in order.
func (s *Store) FailMarkSent(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markErrs = append(s.markErrs, errs...)
}

// FailApply makes the next Apply calls fail with errs, in order.
func (s *Store) FailApply(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyErrs = append(s.applyErrs, errs...)
}

// FailClaim makes the next ClaimSends calls fail with errs, in order.
func (s *Store) FailClaim(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimErrs = append(s.claimErrs, errs...)
}

func pop(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

// Calls returns how many times MarkSent, Apply and ClaimSends were called.
func (s *Store) Calls() (mark, apply, claim int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.markCalls, s.applyCalls, s.claimCalls
}

// Apply folds the changes and leases what became sendable.
func (s *Store) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyCalls++
	if err := ctx.Err(); err != nil {
		return store.ApplyResult{}, err
	}
	if err := pop(&s.applyErrs); err != nil {
		return store.ApplyResult{}, err
	}
	loaded := map[store.MessageRef]*state.Message{}
	for _, r := range store.Refs(req.Changes) {
		if m := s.rows[r]; m != nil {
			loaded[r] = m
		}
	}
	f := store.Fold(loaded, req.Changes)
	now := s.now()
	for _, m := range f.Inserts {
		s.ids++
		m.ID = s.ids
	}
	for _, m := range f.Sendable {
		if req.SendLease > 0 {
			s.token++
			m.LeaseToken = s.token
			m.SendNextAt = now.Add(req.SendLease)
		}
	}
	res := store.ApplyResult{Outcomes: f.Outcomes}
	for _, m := range slices.Concat(f.Inserts, f.Updates) {
		cp := *m
		s.rows[store.MessageRef{BizID: m.BizID, Key: m.Key}] = &cp
	}
	for _, m := range f.Sendable {
		res.Sendable = append(res.Sendable, *m)
	}
	return res, nil
}

// ClaimSends leases due sendable rows in the partitions, oldest id first.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimCalls++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := pop(&s.claimErrs); err != nil {
		return nil, err
	}
	now := s.now()
	var due []*state.Message
	for _, m := range s.rows {
		if m.Sendable() && slices.Contains(c.Partitions, m.Partition) && !m.SendNextAt.After(now) {
			due = append(due, m)
		}
	}
	slices.SortFunc(due, func(a, b *state.Message) int { return int(a.ID - b.ID) })
	if len(due) > c.Limit {
		due = due[:c.Limit]
	}
	out := make([]state.Message, 0, len(due))
	for _, m := range due {
		s.token++
		m.LeaseToken = s.token
		m.SendNextAt = now.Add(c.Lease)
		out = append(out, *m)
	}
	return out, nil
}

// MarkSent marks pending rows sent.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markCalls++
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := pop(&s.markErrs); err != nil {
		return err
	}
	byID := make(map[int64]*state.Message, len(s.rows))
	for _, m := range s.rows {
		byID[m.ID] = m
	}
	now := s.now()
	for _, x := range sent {
		if m := byID[x.ID]; m != nil && m.Sendable() {
			m.SendStatus = state.SendSent
			m.SentAt = now
			m.SendRef = x.Ref
			m.UpdatedAt = now
		}
	}
	return nil
}

// Get returns a copy of one row, or store.ErrNotFound.
func (s *Store) Get(_ context.Context, bizID, key string) (state.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.rows[store.MessageRef{BizID: bizID, Key: key}]
	if m == nil {
		return state.Message{}, store.ErrNotFound
	}
	return *m, nil
}

// Count returns how many rows have the send status.
func (s *Store) Count(st state.SendStatus) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.rows {
		if m.Status == state.Committed && m.SendStatus == st {
			n++
		}
	}
	return n
}
