// Package memstore is the one in-memory store.Store, for tests. Its Apply
// and RetryNowBizID are the SQL drivers' (store/internal/sqlcore) over a
// map, so it folds and leases as they do; it passes the store/storetest
// conformance suite, so tests on it see the real state machine. Fault injection (FailApply,
// FailClaimSends, FailClaimCheckbacks, FailMarkSent) and call counts (Calls)
// are built in; tests that need more (a gate in Apply, a record of the
// requests) wrap it.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Store keeps messages and audit records in memory. Safe for concurrent
// use; every method runs as one transaction.
type Store struct {
	mu     sync.Mutex
	now    func() time.Time
	rows   map[store.MessageRef]*state.Message
	byID   map[int64]store.MessageRef
	audits []store.AuditEntry
	// auditIDs are the IDs of audits (same index), from lastAuditID.
	auditIDs    []int64
	lastAuditID int64
	ids         int64
	// counters are the order sequence counters, per queue.
	counters map[store.OrderRef]int64

	calls Calls
	fail  struct{ apply, claimSends, claimCheckbacks, markSent []error }
	core  sqlcore.Core
}

// Calls counts the calls of the methods that take part in the hot paths.
type Calls struct {
	Apply, ClaimSends, ClaimCheckbacks, MarkSent int
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.NextClaimer = (*Store)(nil)
)

// New returns an empty store reading time from now (nil means time.Now).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{now: now, rows: map[store.MessageRef]*state.Message{}, byID: map[int64]store.MessageRef{},
		counters: map[store.OrderRef]int64{}}
	s.core, _ = sqlcore.NewCore("memstore", txRunner{s}, now, nil, 1, nil, nil) // cannot fail
	return s
}

// txRunner runs the core's transactions under s.mu.
type txRunner struct{ s *Store }

func (r txRunner) InTx(_ context.Context, fn func(tx sqlcore.Tx) error) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return fn(memTx(r))
}

// memTx is one transaction: s.mu is held.
type memTx struct{ s *Store }

func (t memTx) Load(_ context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	loaded := map[store.MessageRef]*state.Message{}
	for _, r := range refs {
		if m := t.s.rows[r]; m != nil {
			loaded[r] = clone(m)
		}
	}
	return loaded, nil
}

func (t memTx) LoadRetryNow(_ context.Context, bizID string, after int64, limit int) ([]state.Message, error) {
	ms := t.s.sorted(func(m *state.Message) bool {
		return m.BizID == bizID && m.ID > after && store.RetryNowEligible(m)
	})
	out := make([]state.Message, min(len(ms), limit))
	for i := range out {
		out[i] = *clone(ms[i])
	}
	return out, nil
}

func (t memTx) Write(_ context.Context, _ map[store.MessageRef]*state.Message, f *store.Folded) error {
	t.s.write(f)
	return nil
}

// AssignSeqs implements sqlcore.Tx: the counters are a map.
func (t memTx) AssignSeqs(_ context.Context, need []*state.Message) error {
	count := map[store.OrderRef]int64{}
	for _, m := range need {
		count[store.OrderOf(m)]++
	}
	for r, n := range count {
		t.s.counters[r] += n
	}
	return sqlcore.Number(need, count, t.s.counters)
}

// Holders implements sqlcore.Tx.
func (t memTx) Holders(_ context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	want := make(map[store.OrderRef]bool, len(refs))
	for _, r := range refs {
		want[r] = true
	}
	low := t.s.holders(func(m *state.Message) bool { return want[store.OrderOf(m)] && !slices.Contains(exclude, m.ID) })
	return low, nil
}

// holders returns the lowest sequence of the holders of each queue among
// the rows keep accepts. s.mu must be held.
func (s *Store) holders(keep func(m *state.Message) bool) map[store.OrderRef]int64 {
	low := map[store.OrderRef]int64{}
	for _, m := range s.rows {
		if !m.HoldsOrder() || !keep(m) {
			continue
		}
		r := store.OrderOf(m)
		if l, ok := low[r]; !ok || m.OrderSeq < l {
			low[r] = m.OrderSeq
		}
	}
	return low
}

// Wake implements sqlcore.Tx.
func (t memTx) Wake(_ context.Context, ids []int64, now time.Time) (int, error) {
	return t.s.wake(ids, now), nil
}

// wake is sqlcore.WakeSQL in memory. s.mu must be held.
func (s *Store) wake(ids []int64, now time.Time) int {
	if len(ids) == 0 {
		return 0
	}
	n := 0
	for _, m := range s.heads(ids) {
		if m.SendStatus == state.SendPending && m.SendAttempts == 0 && m.LeaseToken == 0 && m.SendNextAt.After(now) {
			m.SendNextAt = now
			n++
		}
	}
	return n
}

// heads returns the heads (lowest-sequenced holders) of the queues of
// ids. s.mu must be held.
func (s *Store) heads(ids []int64) map[store.OrderRef]*state.Message {
	queues := map[store.OrderRef]bool{}
	for _, id := range ids {
		if r, ok := s.byID[id]; ok && s.rows[r].OrderKey != "" {
			queues[store.OrderOf(s.rows[r])] = true
		}
	}
	head := map[store.OrderRef]*state.Message{}
	if len(queues) == 0 {
		return head
	}
	for _, m := range s.rows {
		r := store.OrderOf(m)
		if queues[r] && m.HoldsOrder() && (head[r] == nil || m.OrderSeq < head[r].OrderSeq) {
			head[r] = m
		}
	}
	return head
}

// FailApply makes the next Apply calls fail with errs, in order.
func (s *Store) FailApply(errs ...error) { s.inject(&s.fail.apply, errs) }

// FailClaimSends makes the next ClaimSends calls fail with errs, in order.
func (s *Store) FailClaimSends(errs ...error) { s.inject(&s.fail.claimSends, errs) }

// FailClaimCheckbacks makes the next ClaimCheckbacks calls fail with errs,
// in order.
func (s *Store) FailClaimCheckbacks(errs ...error) { s.inject(&s.fail.claimCheckbacks, errs) }

// FailMarkSent makes the next MarkSent calls fail with errs, in order.
func (s *Store) FailMarkSent(errs ...error) { s.inject(&s.fail.markSent, errs) }

func (s *Store) inject(to *[]error, errs []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*to = append(*to, errs...)
}

// Calls returns how many times each hot-path method was called.
func (s *Store) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// begin counts a call and returns the error it must fail with: ctx's, or
// an injected one. s.mu must be held.
func (s *Store) begin(ctx context.Context, n *int, errs *[]error) error {
	*n++
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(*errs) > 0 {
		err := (*errs)[0]
		*errs = (*errs)[1:]
		return err
	}
	return nil
}

// clone copies a message and the slices it owns.
func clone(m *state.Message) *state.Message {
	cp := *m
	cp.Payload = bytes.Clone(m.Payload)
	if m.Headers != nil {
		cp.Headers = make([]envelope.Header, len(m.Headers))
		for i, h := range m.Headers {
			cp.Headers[i] = envelope.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
		}
	}
	return &cp
}

// Apply implements store.Store.
func (s *Store) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	s.mu.Lock()
	err := s.begin(ctx, &s.calls.Apply, &s.fail.apply)
	s.mu.Unlock()
	if err != nil {
		return store.ApplyResult{}, err
	}
	return s.core.Apply(ctx, req)
}

// write stores a prepared Fold result. s.mu must be held.
func (s *Store) write(f *store.Folded) {
	for _, m := range f.Inserts {
		s.ids++
		m.ID = s.ids
	}
	for _, m := range slices.Concat(f.Inserts, f.Updates) {
		r := store.MessageRef{BizID: m.BizID, Key: m.Key}
		s.rows[r] = clone(m)
		s.byID[m.ID] = r
	}
	s.addAudits(f.Audits...)
}

// ClaimSends implements store.Store.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, &s.calls.ClaimSends, &s.fail.claimSends); err != nil {
		return nil, err
	}
	c.FairCheckbacks = nil // check-back claims only
	free := func(*state.Message) bool { return true }
	if c.Ordered {
		low := s.holders(func(*state.Message) bool { return true })
		free = func(m *state.Message) bool { return m.OrderSeq == 0 || low[store.OrderOf(m)] >= m.OrderSeq }
	}
	heads, err := s.claim(c, func(m *state.Message) time.Time { return m.SendNextAt },
		func(m *state.Message) bool { return m.Sendable() && free(m) },
		func(m *state.Message, until time.Time) { m.SendNextAt = until })
	if err != nil || !c.Ordered {
		return heads, err
	}
	return s.runs(heads, c, codec.Time(s.now())), nil
}

// runs leases the run behind each head of heads (store.Claim.Run), as
// sqlcore's ClaimRuns does. s.mu must be held.
func (s *Store) runs(heads []state.Message, c store.Claim, now time.Time) []state.Message {
	if c.Run <= 1 {
		return heads
	}
	take := store.RunBudget(heads, c)
	want := map[store.OrderRef]*state.Message{}
	n := map[int64]int64{}
	for i := range heads {
		h := &heads[i]
		if r := store.OrderOf(h); store.RunHead(h) && want[r] == nil {
			if k := take(h, c.Run-1); k > 0 {
				want[r], n[h.ID] = h, int64(k)
			}
		}
	}
	if len(want) == 0 {
		return heads
	}
	bySeq := map[store.OrderRef]map[int64]*state.Message{}
	for _, m := range s.rows {
		r := store.OrderOf(m)
		if h := want[r]; h != nil && m.HoldsOrder() && m.OrderSeq > h.OrderSeq && m.OrderSeq <= h.OrderSeq+n[h.ID] {
			if bySeq[r] == nil {
				bySeq[r] = map[int64]*state.Message{}
			}
			bySeq[r][m.OrderSeq] = m
		}
	}
	runs := map[int64][]state.Message{}
	for i := range heads {
		h := &heads[i]
		r := store.OrderOf(h)
		if want[r] != h {
			continue
		}
		for seq := h.OrderSeq + 1; seq <= h.OrderSeq+n[h.ID]; seq++ {
			m := bySeq[r][seq]
			if m == nil || !store.RunOf(h, m, seq, now) {
				break
			}
			m.LeaseToken, m.SendNextAt = h.LeaseToken, h.SendNextAt
			runs[h.ID] = append(runs[h.ID], *clone(m))
		}
	}
	return store.Runs(heads, runs)
}

// ClaimCheckbacks implements store.Store.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, &s.calls.ClaimCheckbacks, &s.fail.claimCheckbacks); err != nil {
		return nil, err
	}
	c.FairSends = nil // send claims only
	return s.claim(c, func(m *state.Message) time.Time { return m.VerifyNextAt },
		func(m *state.Message) bool { return m.Status == state.Prepared },
		func(m *state.Message, until time.Time) { *m = state.ClaimCheckback(*m, until) })
}

// claimFair is claimDue for a fair claim (Claim.FairSends or
// Claim.FairCheckbacks, f): every due row in order, then store.Pick.
func (s *Store) claimFair(c store.Claim, f *store.Fair, due func(*state.Message) time.Time, ok func(*state.Message) bool,
	lease func(*state.Message, time.Time)) []state.Message {
	now := codec.Time(s.now())
	var ms []*state.Message
	for _, m := range s.rows {
		if ok(m) && slices.Contains(c.Partitions, m.Partition) && !due(m).After(now) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *state.Message) int { return cmp.Or(due(a).Compare(due(b)), cmp.Compare(a.ID, b.ID)) })
	ms = store.Pick(f, c.Limit, ms, func(m **state.Message) string { return (*m).BizID })
	token := codec.LeaseToken()
	out := make([]state.Message, len(ms))
	for i, m := range ms {
		lease(m, now.Add(c.Lease))
		m.LeaseToken = token
		out[i] = *clone(m)
	}
	return out
}

// claim leases the Limit earliest due rows (by due time, then id). s.mu
// must be held.
func (s *Store) claim(c store.Claim, due func(*state.Message) time.Time, ok func(*state.Message) bool,
	lease func(*state.Message, time.Time)) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		if f := cmp.Or(c.FairSends, c.FairCheckbacks); f != nil {
			return s.claimFair(c, f, due, ok, lease), nil
		}
		return s.claimDue(c, due, ok, lease), nil
	})
}

// claimDue is claim for a checked claim.
func (s *Store) claimDue(c store.Claim, due func(*state.Message) time.Time, ok func(*state.Message) bool,
	lease func(*state.Message, time.Time)) []state.Message {
	now := codec.Time(s.now())
	order := func(a, b *state.Message) int {
		return cmp.Or(due(a).Compare(due(b)), cmp.Compare(a.ID, b.ID))
	}
	// The Limit earliest, kept sorted in a small slice: a scan, not a sort
	// of everything due (a database uses its index).
	ms := make([]*state.Message, 0, min(c.Limit, 1024))
	for _, m := range s.rows {
		if !ok(m) || !slices.Contains(c.Partitions, m.Partition) || due(m).After(now) {
			continue
		}
		if len(ms) == c.Limit && order(m, ms[len(ms)-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(ms, m, order)
		if len(ms) == c.Limit {
			ms = ms[:len(ms)-1]
		}
		ms = slices.Insert(ms, i, m)
	}
	token := codec.LeaseToken()
	out := make([]state.Message, len(ms))
	for i, m := range ms {
		lease(m, now.Add(c.Lease))
		m.LeaseToken = token
		out[i] = *clone(m)
	}
	return out
}

// MarkSent implements store.Store.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, &s.calls.MarkSent, &s.fail.markSent); err != nil {
		return err
	}
	now := codec.Time(s.now())
	s.mark(sent, now)
	s.wake(orderedIDs(sent), now)
	return nil
}

// mark writes sent marks (MarkSent). s.mu must be held.
func (s *Store) mark(sent []store.Sent, now time.Time) {
	for _, x := range sent {
		if r, ok := s.byID[x.ID]; ok {
			if m := s.rows[r]; m.Sendable() {
				m.SendStatus = state.SendSent
				m.SentAt = now
				m.SendRef = x.Ref
				m.UpdatedAt = now
				m.LastError = ""
			}
		}
	}
}

// orderedIDs returns the ids of the Ordered ones of sent.
func orderedIDs(sent []store.Sent) []int64 {
	var ids []int64
	for _, x := range sent {
		if x.Ordered {
			ids = append(ids, x.ID)
		}
	}
	return ids
}

// MarkSentClaimNext implements store.NextClaimer.
func (s *Store) MarkSentClaimNext(ctx context.Context, sent []store.Sent, c store.Claim) ([]state.Message, int, error) {
	ids := orderedIDs(sent)
	if len(ids) == 0 || len(c.Partitions) == 0 || c.Lease <= 0 {
		return nil, len(ids), s.MarkSent(ctx, sent)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, &s.calls.MarkSent, &s.fail.markSent); err != nil {
		return nil, 0, err
	}
	now := codec.Time(s.now())
	s.mark(sent, now)
	token := codec.LeaseToken()
	var out []state.Message
	for _, m := range s.heads(ids) {
		if m.SendStatus == state.SendPending && m.SendAttempts == 0 && slices.Contains(c.Partitions, m.Partition) &&
			(m.LeaseToken == 0 || !m.SendNextAt.After(now)) {
			m.SendNextAt = now.Add(c.Lease)
			m.LeaseToken = token
			out = append(out, *clone(m))
		}
	}
	woken := s.wake(ids, now)
	if len(out) > 0 {
		c.Limit = max(c.Limit, len(out))
		out = s.runs(out, c, now)
	}
	return out, woken, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	if err := ctx.Err(); err != nil {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.rows[store.MessageRef{BizID: bizID, Key: key}]
	if m == nil {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, store.ErrNotFound)
	}
	return *clone(m), nil
}

// sorted returns the rows matching keep, by id ascending. s.mu must be
// held.
func (s *Store) sorted(keep func(*state.Message) bool) []*state.Message {
	var ms []*state.Message
	for _, m := range s.rows {
		if keep(m) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *state.Message) int { return cmp.Compare(a.ID, b.ID) })
	return ms
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) (store.Page, error) {
	after, err := codec.DecodeCursor(f.Cursor)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	limit := codec.Limit(f.Limit, 100, 1000)
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.sorted(func(m *state.Message) bool {
		return (after <= 0 || m.ID < after) &&
			(f.BizID == "" || m.BizID == f.BizID) &&
			(f.Status == state.None || m.Status == f.Status) &&
			(f.SendStatus == nil || m.SendStatus == *f.SendStatus) &&
			(f.KeyContains == "" || strings.Contains(m.Key, f.KeyContains)) &&
			(f.CreatedBefore.IsZero() || m.CreatedAt.Before(f.CreatedBefore)) &&
			(!f.Orphan || m.Status == state.Committed && !m.HasBody) &&
			(f.ScheduledAt.IsZero() || m.Scheduled(f.ScheduledAt))
	})
	slices.Reverse(ms)
	var p store.Page
	if len(ms) > limit {
		ms = ms[:limit]
		p.Next = codec.EncodeCursor(ms[limit-1].ID)
	}
	for _, m := range ms {
		sum := store.Summary{Message: *m, PayloadSize: len(m.Payload)}
		sum.Payload, sum.Headers = nil, nil
		p.Messages = append(p.Messages, sum)
	}
	return p, nil
}

// Counts implements store.Store.
func (s *Store) Counts(ctx context.Context) ([]store.Count, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[store.Count]store.Count{}
	for _, m := range s.rows {
		k := store.Count{BizID: m.BizID, Status: m.Status, SendStatus: m.SendStatus}
		c, ok := n[k]
		if !ok {
			c = k
		}
		c.N++
		if m.Scheduled(s.now()) {
			c.Scheduled++
		}
		if c.Oldest.IsZero() || m.CreatedAt.Before(c.Oldest) {
			c.Oldest = m.CreatedAt
		}
		n[k] = c
	}
	var cs []store.Count
	for _, c := range n {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b store.Count) int {
		return cmp.Or(cmp.Compare(a.BizID, b.BizID), cmp.Compare(a.Status, b.Status), cmp.Compare(a.SendStatus, b.SendStatus))
	})
	return cs, nil
}

// OldestPrepared implements store.Store.
func (s *Store) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for _, m := range s.rows {
		if m.Status != state.Prepared {
			continue
		}
		if t, ok := out[m.BizID]; !ok || m.CreatedAt.Before(t) {
			out[m.BizID] = m.CreatedAt
		}
	}
	return out, nil
}

// SendBacklog implements store.Backlogger.
func (s *Store) SendBacklog(ctx context.Context) ([]store.BizBacklog, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("send backlog: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := codec.Time(s.now())
	per := map[string]*store.BizBacklog{}
	for _, m := range s.rows {
		if !m.Sendable() {
			continue
		}
		b := per[m.BizID]
		if b == nil {
			b = &store.BizBacklog{BizID: m.BizID}
			per[m.BizID] = b
		}
		b.Pending++
		if !m.SendNextAt.After(now) {
			b.Due++
			if b.OldestDue.IsZero() || m.SendNextAt.Before(b.OldestDue) {
				b.OldestDue = m.SendNextAt
			}
		}
	}
	out := make([]store.BizBacklog, 0, len(per))
	for _, biz := range slices.Sorted(maps.Keys(per)) {
		out = append(out, *per[biz])
	}
	return out, nil
}

// OrphanCommits implements store.Store.
func (s *Store) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("orphan commits: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]store.OrphanStat{}
	for _, m := range s.rows {
		if m.Status != state.Committed || m.HasBody {
			continue
		}
		o, ok := out[m.BizID]
		if !ok || m.CreatedAt.Before(o.Oldest) {
			o.Oldest = m.CreatedAt
		}
		o.N++
		out[m.BizID] = o
	}
	return out, nil
}

// Audit implements store.Store.
func (s *Store) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.AuditEntry
	for _, a := range s.audits {
		if a.BizID == bizID && a.Key == key {
			out = append(out, a)
		}
	}
	return out, nil
}

// AddAudit implements store.Store.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("add audit for %s:%s: %w", e.BizID, e.Key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.At = codec.Time(e.At)
	s.addAudits(e)
	return nil
}

// RetryNowBizID implements store.Store.
func (s *Store) RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("retry now %s: %w", bizID, err)
	}
	return s.core.RetryNowBizID(ctx, bizID, who)
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge: limit must be positive")
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := map[store.MessageRef]bool{}
	for _, m := range s.sorted(func(m *state.Message) bool {
		return m.Status == state.RolledBack && m.DecidedAt.Before(before) ||
			m.Status == state.Committed && m.SendStatus == state.SendSent && m.SentAt.Before(before)
	}) {
		if len(gone) == limit {
			break
		}
		r := store.MessageRef{BizID: m.BizID, Key: m.Key}
		gone[r] = true
		delete(s.rows, r)
		delete(s.byID, m.ID)
	}
	return len(gone), nil
}

// addAudits appends audit records with new IDs; s.mu is held.
func (s *Store) addAudits(es ...store.AuditEntry) {
	for _, e := range es {
		s.lastAuditID++
		s.audits = append(s.audits, e)
		s.auditIDs = append(s.auditIDs, s.lastAuditID)
	}
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, errors.New("audit log: limit must be positive")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.AuditEntry
	for i := len(s.audits) - 1; i >= 0 && len(out) < q.Limit; i-- {
		a := s.audits[i]
		a.ID = s.auditIDs[i]
		if (q.BizID == "" || a.BizID == q.BizID) && (q.BeforeID <= 0 || a.ID < q.BeforeID) && !a.At.Before(q.Since) {
			out = append(out, a)
		}
	}
	return out, nil
}

// PurgeAudit implements store.Store.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge audit: limit must be positive")
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("purge audit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	keep := s.audits[:0]
	keepIDs := s.auditIDs[:0]
	for i, a := range s.audits {
		if n < limit && a.At.Before(before) {
			n++
			continue
		}
		keep, keepIDs = append(keep, a), append(keepIDs, s.auditIDs[i])
	}
	s.audits, s.auditIDs = keep, keepIDs
	return n, nil
}

// Close implements store.Store; it does nothing.
func (s *Store) Close() error { return nil }

// BlockedKeys implements store.Orderer.
func (s *Store) BlockedKeys(ctx context.Context, bizID string, limit int) ([]store.BlockedKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	low := s.holders(func(*state.Message) bool { return true })
	var out []store.BlockedKey
	for _, m := range s.rows {
		r := store.OrderOf(m)
		if !m.HoldsOrder() || low[r] != m.OrderSeq || (bizID != "" && m.BizID != bizID) ||
			(m.SendStatus != state.SendDead && m.SendAttempts == 0) {
			continue
		}
		b := store.BlockedKey{OrderRef: r, Since: m.DecidedAt, Head: store.Summary{Message: *clone(m), PayloadSize: len(m.Payload)}}
		b.Head.Payload, b.Head.Headers = nil, nil
		for _, w := range s.rows {
			if w.HoldsOrder() && store.OrderOf(w) == r && w.OrderSeq > m.OrderSeq {
				b.Waiting++
			}
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b store.BlockedKey) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Head.ID, b.Head.ID))
	})
	return out[:min(len(out), max(1, min(limit, 1000)))], nil
}
