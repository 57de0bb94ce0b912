package verifier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

// clock is the manual test clock.
type clock = testclock.Clock

func newClock() *clock { return testclock.At(time.Unix(1_800_000_000, 0).UTC()) }

// newRealClock follows the wall clock, for tests where put-offs must come
// due while calls run in real time.
func newRealClock() *clock { return testclock.Real() }

// memStore is the in-memory store (store/memstore): it claims like the SQL
// stores (state.ClaimCheckback: the attempt counted, due again at
// now+lease) and sets a fresh lease token.
type memStore struct{ *memstore.Store }

func newMemStore(now func() time.Time) *memStore { return &memStore{memstore.New(now)} }

func (s *memStore) claimCount() int { return s.Calls().ClaimCheckbacks }

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
