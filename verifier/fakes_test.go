package verifier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// clock is a manual test clock.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0).UTC()} }

// newRealClock follows the wall clock, for tests where put-offs must come
// due while calls run in real time.
func newRealClock() *clock { return &clock{real: true} }

func (c *clock) Now() time.Time {
	if c.real {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memStore is an in-memory Store built on store.Fold, so state transitions
// are the real state machine's. It claims like the SQL stores
// (state.ClaimCheckback: the attempt counted, due again at now+lease) and
// sets a fresh lease token.
type memStore struct {
	mu     sync.Mutex
	now    func() time.Time
	rows   map[store.MessageRef]*state.Message
	nextID int64
	token  int64
	claims int
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, rows: map[store.MessageRef]*state.Message{}}
}

func (s *memStore) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	now := s.now()
	// The Limit earliest due rows, by (VerifyNextAt, ID), kept sorted in a
	// small slice: a scan, not a sort of everything due (a database uses
	// its index).
	less := func(a, b *state.Message) bool {
		if c := a.VerifyNextAt.Compare(b.VerifyNextAt); c != 0 {
			return c < 0
		}
		return a.ID < b.ID
	}
	due := make([]*state.Message, 0, c.Limit)
	for _, m := range s.rows {
		if m.Status != state.Prepared || m.VerifyNextAt.After(now) || !slices.Contains(c.Partitions, m.Partition) {
			continue
		}
		if len(due) == c.Limit && !less(m, due[len(due)-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(due, m, func(a, b *state.Message) int {
			if less(a, b) {
				return -1
			}
			return 1
		})
		if len(due) == c.Limit {
			due = due[:len(due)-1]
		}
		due = slices.Insert(due, i, m)
	}
	out := make([]state.Message, len(due))
	for i, m := range due {
		s.token++
		*m = state.ClaimCheckback(*m, now.Add(c.Lease))
		m.LeaseToken = s.token
		out[i] = *m
	}
	return out, nil
}

func (s *memStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return store.ApplyResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	loaded := map[store.MessageRef]*state.Message{}
	for _, r := range store.Refs(req.Changes) {
		if m := s.rows[r]; m != nil {
			cp := *m
			loaded[r] = &cp
		}
	}
	f := store.Fold(loaded, req.Changes)
	now := s.now()
	for _, m := range f.Sendable {
		s.token++
		m.LeaseToken = s.token
		m.SendNextAt = now.Add(req.SendLease)
	}
	for _, m := range f.Inserts {
		s.nextID++
		m.ID = s.nextID
	}
	for _, m := range append(f.Inserts, f.Updates...) {
		cp := *m
		s.rows[store.MessageRef{BizID: m.BizID, Key: m.Key}] = &cp
	}
	res := store.ApplyResult{Outcomes: f.Outcomes}
	for _, m := range f.Sendable {
		res.Sendable = append(res.Sendable, *m)
	}
	return res, nil
}

func (s *memStore) Get(_ context.Context, bizID, key string) (state.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.rows[store.MessageRef{BizID: bizID, Key: key}]
	if !ok {
		return state.Message{}, store.ErrNotFound
	}
	return *m, nil
}

func (s *memStore) claimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims
}

type nopStore struct{}

func (nopStore) ClaimCheckbacks(context.Context, store.Claim) ([]state.Message, error) {
	return nil, nil
}
func (nopStore) Apply(context.Context, store.ApplyRequest) (store.ApplyResult, error) {
	return store.ApplyResult{}, errors.New("nop")
}

type nopOwned struct{}

func (nopOwned) Partitions() []int32      { return nil }
func (nopOwned) Changed() <-chan struct{} { return nil }

// handoffs records what the verifier hands to the forwarder.
type handoffs struct {
	mu   sync.Mutex
	msgs []state.Message
}

func (h *handoffs) Handoff(msgs []state.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, msgs...)
}

func (h *handoffs) keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.msgs {
		out = append(out, m.MessageID())
	}
	slices.Sort(out)
	return out
}

func (h *handoffs) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}
