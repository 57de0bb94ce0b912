package sharded

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// Shard is one inner store and the buckets it holds.
type Shard struct {
	// Store is the shard's store (any driver).
	Store store.Store
	// Buckets lists the shard's buckets (ParseBuckets syntax, "0-511").
	Buckets string
	// Close, when set, runs after Store.Close when the sharded store
	// closes (the pool the shard's store was given, say).
	Close func()
}

// Store implements store.Store over shards.
type Store struct {
	shards []Shard
	m      *Map
	// next rotates which shard gets the remainder of a split claim limit.
	next atomic.Uint32
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.NextClaimer = (*Store)(nil)
)

// ErrOrderAcrossShards is what a store of several shards returns when
// asked for per-key order (ApplyRequest.Ordered, Claim.Ordered,
// BlockedKeys): it needs the messages of a key, their sequence counter and
// the claim rule in one database, and such a store places messages by
// their message key. Messages keep their order key and a per-shard
// sequence; they are forwarded without order.
var ErrOrderAcrossShards = fmt.Errorf("sharded store of several shards: %w", store.ErrOrderUnavailable)

// New returns a store over shards; every bucket must be mapped to exactly
// one shard.
func New(shards []Shard) (*Store, error) {
	specs := make([]string, len(shards))
	for i, s := range shards {
		if s.Store == nil {
			return nil, fmt.Errorf("sharded store: shard %d has no store", i)
		}
		specs[i] = s.Buckets
	}
	m, err := NewMap(specs)
	if err != nil {
		return nil, fmt.Errorf("sharded store: %w", err)
	}
	return &Store{shards: shards, m: m}, nil
}

// Map returns the bucket → shard map in use.
func (s *Store) Map() Map { return *s.m }

// shardBits is how many low bits of an outer ID carry the shard.
const shardBits = 8

func outerID(inner int64, shard int) int64 { return inner<<shardBits | int64(shard) }

func splitID(id int64) (inner int64, shard int) {
	return id >> shardBits, int(id & (1<<shardBits - 1))
}

func (s *Store) shardOf(id int64) (int64, int, error) {
	inner, sh := splitID(id)
	if id <= 0 || sh >= len(s.shards) {
		return 0, 0, fmt.Errorf("id %d belongs to no shard of %d", id, len(s.shards))
	}
	return inner, sh, nil
}

func outerMessages(ms []state.Message, shard int) []state.Message {
	for i := range ms {
		ms[i].ID = outerID(ms[i].ID, shard)
	}
	return ms
}

// each runs fn on every shard concurrently and joins the errors, each
// wrapped with its shard.
func (s *Store) each(fn func(i int, st store.Store) error) error {
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for i, sh := range s.shards {
		wg.Go(func() {
			if err := fn(i, sh.Store); err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Apply implements store.Store. It splits the changes by shard and applies
// each shard's part in one transaction of that shard, concurrently. It is
// not atomic across shards (see the package doc); an error from any shard
// is returned, and the caller replays the whole batch (a no-op where it
// was committed).
func (s *Store) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if req.Ordered && len(s.shards) > 1 {
		return store.ApplyResult{}, ErrOrderAcrossShards
	}
	parts := make([][]int, len(s.shards))
	for i, c := range req.Changes {
		sh := s.m.Shard(c.BizID, c.Key)
		parts[sh] = append(parts[sh], i)
	}
	res := store.ApplyResult{Outcomes: make([]store.ChangeOutcome, len(req.Changes))}
	sendable := make([][]state.Message, len(s.shards))
	forwarded := make([][]state.Message, len(s.shards))
	woken := make([]int, len(s.shards))
	err := s.each(func(i int, st store.Store) error {
		if len(parts[i]) == 0 {
			return nil
		}
		sub := store.ApplyRequest{SendLease: req.SendLease, Forward: forwardWithOuterIDs(req.Forward, i), Changes: req.Changes,
			Ordered: req.Ordered}
		if len(parts[i]) < len(req.Changes) { // the batch spans shards
			sub.Changes = make([]store.Change, len(parts[i]))
			for j, k := range parts[i] {
				sub.Changes[j] = req.Changes[k]
			}
		}
		r, err := st.Apply(ctx, sub)
		if err != nil {
			return err
		}
		if len(r.Outcomes) != len(sub.Changes) {
			return fmt.Errorf("apply: %d outcomes for %d changes", len(r.Outcomes), len(sub.Changes))
		}
		for j, k := range parts[i] {
			res.Outcomes[k] = r.Outcomes[j]
		}
		sendable[i] = outerMessages(r.Sendable, i)
		forwarded[i] = outerMessages(r.Forwarded, i)
		woken[i] = r.Woken
		return nil
	})
	if err != nil {
		return store.ApplyResult{}, fmt.Errorf("sharded apply: %w", err)
	}
	for i := range sendable {
		res.Sendable = append(res.Sendable, sendable[i]...)
		res.Forwarded = append(res.Forwarded, forwarded[i]...)
		res.Woken += woken[i]
	}
	return res, nil
}

// forwardWithOuterIDs gives forward the shard's messages with their outer
// IDs (a new row's 0 stays 0). Shards apply concurrently, so forward is
// called concurrently, as ApplyRequest.Forward allows.
func forwardWithOuterIDs(forward store.ForwardFunc, shard int) store.ForwardFunc {
	if forward == nil {
		return nil
	}
	return func(ctx context.Context, msgs []state.Message) []store.Forwarded {
		for i := range msgs {
			if msgs[i].ID != 0 {
				msgs[i].ID = outerID(msgs[i].ID, shard)
			}
		}
		return forward(ctx, msgs)
	}
}

// ClaimSends implements store.Store: the limit is split over the shards,
// then what a shard left unused is offered to the shards that filled their
// share.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	if c.Ordered && len(s.shards) > 1 {
		return nil, ErrOrderAcrossShards
	}
	return s.claim(ctx, c, store.Store.ClaimSends)
}

// ClaimCheckbacks implements store.Store like ClaimSends.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, c, store.Store.ClaimCheckbacks)
}

func (s *Store) claim(ctx context.Context, c store.Claim,
	fn func(store.Store, context.Context, store.Claim) ([]state.Message, error)) ([]state.Message, error) {
	if c.Limit < 1 || c.Lease <= 0 || len(s.shards) == 1 {
		ms, err := fn(s.shards[0].Store, ctx, c) // the inner store validates
		return outerMessages(ms, 0), err
	}
	n := len(s.shards)
	share := make([]int, n)
	first := int(s.next.Add(1)) % n
	for i := range n {
		share[i] = c.Limit / n
		if (i-first+n)%n < c.Limit%n {
			share[i]++
		}
	}
	got := make([][]state.Message, n)
	err := s.each(func(i int, st store.Store) error {
		if share[i] == 0 {
			return nil
		}
		cc := c
		cc.Limit = share[i]
		cc.FairSends = splitFair(c.FairSends, i, first, n, nil)
		cc.FairCheckbacks = splitFair(c.FairCheckbacks, i, first, n, nil)
		ms, err := fn(st, ctx, cc)
		got[i] = outerMessages(ms, i)
		return err
	})
	total := 0
	for _, ms := range got {
		total += len(ms)
	}
	// A second round for what the first left unused, to the shards that
	// used their whole share or had none (work is seldom spread evenly).
	for k := range n {
		i := (first + k) % n
		if err != nil || total >= c.Limit || (share[i] > 0 && len(got[i]) < share[i]) {
			continue
		}
		cc := c
		cc.Limit = c.Limit - total
		cc.FairSends = splitFair(c.FairSends, 0, 0, 1, got)
		cc.FairCheckbacks = splitFair(c.FairCheckbacks, 0, 0, 1, got)
		ms, e := fn(s.shards[i].Store, ctx, cc)
		if e != nil {
			err = fmt.Errorf("shard %d: %w", i, e)
			break
		}
		got[i] = append(got[i], outerMessages(ms, i)...)
		total += len(ms)
	}
	var out []state.Message
	for _, ms := range got {
		out = append(out, ms...)
	}
	if err != nil {
		// Rows already claimed stay leased and come back after the lease.
		return out, fmt.Errorf("sharded claim: %w", err)
	}
	return out, nil
}

// splitFair returns shard i's part of a fair claim's caps (store.Fair.Max,
// sends or check-backs)
// in the first round of n shards: each cap split like the limit, so the
// shards together never take more than it. In the second round (n 1) it
// is what the rows already claimed (got) left of each cap.
func splitFair(f *store.Fair, i, first, n int, got [][]state.Message) *store.Fair {
	if f == nil || len(f.Max) == 0 {
		return f
	}
	claimed := map[string]int{}
	for _, ms := range got {
		for _, m := range ms {
			claimed[m.BizID]++
		}
	}
	caps := make(map[string]int, len(f.Max))
	for biz, m := range f.Max {
		m -= claimed[biz]
		part := m / n
		if (i-first+n)%n < m%n {
			part++
		}
		caps[biz] = max(0, part)
	}
	return &store.Fair{Weights: f.Weights, Max: caps}
}

// MarkSent implements store.Store, one statement per shard.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	parts := make([][]store.Sent, len(s.shards))
	for _, x := range sent {
		inner, sh, err := s.shardOf(x.ID)
		if err != nil {
			return fmt.Errorf("sharded mark sent: %w", err)
		}
		parts[sh] = append(parts[sh], store.Sent{ID: inner, Ref: x.Ref, Ordered: x.Ordered})
	}
	err := s.each(func(i int, st store.Store) error {
		if len(parts[i]) == 0 {
			return nil
		}
		return st.MarkSent(ctx, parts[i])
	})
	if err != nil {
		return fmt.Errorf("sharded mark sent: %w", err)
	}
	return nil
}

// MarkSentClaimNext implements store.NextClaimer for a store of one shard
// whose store has it (per-key order is kept on one shard only); otherwise
// it is MarkSent and leases nothing (the marks wake the next messages for
// the claims).
func (s *Store) MarkSentClaimNext(ctx context.Context, sent []store.Sent, c store.Claim) ([]state.Message, int, error) {
	nc, ok := s.shards[0].Store.(store.NextClaimer)
	if len(s.shards) > 1 || !ok {
		n := 0
		for _, x := range sent {
			if x.Ordered {
				n++
			}
		}
		return nil, n, s.MarkSent(ctx, sent) // woken: not counted, so all of them
	}
	inner := make([]store.Sent, len(sent))
	for i, x := range sent {
		id, _, err := s.shardOf(x.ID)
		if err != nil {
			return nil, 0, fmt.Errorf("sharded mark sent: %w", err)
		}
		inner[i] = store.Sent{ID: id, Ref: x.Ref, Ordered: x.Ordered}
	}
	ms, woken, err := nc.MarkSentClaimNext(ctx, inner, c)
	if err != nil {
		return nil, 0, fmt.Errorf("sharded mark sent: %w", err)
	}
	return outerMessages(ms, 0), woken, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	sh := s.m.Shard(bizID, key)
	m, err := s.shards[sh].Store.Get(ctx, bizID, key)
	if err != nil {
		return m, err
	}
	m.ID = outerID(m.ID, sh)
	return m, nil
}

// The List cursor holds every shard's position: "" (start), "-" (done)
// or the inner ID below which the shard's next rows are.
const cursorPrefix = "shards:"

func encodeCursor(pos []int64) string {
	parts := make([]string, len(pos))
	for i, p := range pos {
		parts[i] = strconv.FormatInt(p, 10)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strings.Join(parts, ",")))
}

func (s *Store) decodeCursor(c string) ([]int64, error) {
	pos := make([]int64, len(s.shards))
	if c == "" {
		return pos, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w %q", codec.ErrBadCursor, c)
	}
	parts := strings.Split(rest, ",")
	if len(parts) != len(s.shards) {
		return nil, fmt.Errorf("%w %q (made for %d shards, there are %d)", codec.ErrBadCursor, c, len(parts), len(s.shards))
	}
	for i, p := range parts {
		if pos[i], err = strconv.ParseInt(p, 10, 64); err != nil || pos[i] < -1 {
			return nil, fmt.Errorf("%w %q", codec.ErrBadCursor, c)
		}
	}
	return pos, nil
}

// List implements store.Store: each shard's page, merged newest first
// (creation time, then ID), with a cursor holding every shard's position.
func (s *Store) List(ctx context.Context, f store.Filter) (store.Page, error) {
	pos, err := s.decodeCursor(f.Cursor)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	limit := codec.Limit(f.Limit, 100, 1000)
	pages := make([][]store.Summary, len(s.shards))
	more := make([]bool, len(s.shards))
	err = s.each(func(i int, st store.Store) error {
		if pos[i] < 0 {
			return nil
		}
		ff := f
		ff.Limit = limit
		ff.Cursor = ""
		if pos[i] > 0 {
			ff.Cursor = codec.EncodeCursor(pos[i])
		}
		p, err := st.List(ctx, ff)
		if err != nil {
			return err
		}
		pages[i], more[i] = p.Messages, p.Next != ""
		return nil
	})
	if err != nil {
		return store.Page{}, fmt.Errorf("sharded list: %w", err)
	}
	// Merge the shards' pages (each newest first), keeping each shard's
	// order so the positions stay exact.
	heads := make([]int, len(s.shards))
	var out []store.Summary
	for len(out) < limit {
		best := -1
		for i, ms := range pages {
			if heads[i] >= len(ms) {
				continue
			}
			if best < 0 || newer(ms[heads[i]], i, pages[best][heads[best]], best) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		m := pages[best][heads[best]]
		heads[best]++
		pos[best] = m.ID
		m.ID = outerID(m.ID, best)
		out = append(out, m)
	}
	left := false
	for i, ms := range pages {
		switch {
		case pos[i] < 0:
		case heads[i] < len(ms) || more[i]:
			left = true
		default:
			pos[i] = -1
		}
	}
	p := store.Page{Messages: out}
	if left {
		p.Next = encodeCursor(pos)
	}
	return p, nil
}

// newer orders messages newest first across shards.
func newer(a store.Summary, sa int, b store.Summary, sb int) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return outerID(a.ID, sa) > outerID(b.ID, sb)
}

// Counts implements store.Store: the shards' counts summed.
func (s *Store) Counts(ctx context.Context) ([]store.Count, error) {
	type k struct {
		biz string
		st  state.Status
		ss  state.SendStatus
	}
	var mu sync.Mutex
	sum := map[k]store.Count{}
	err := s.each(func(_ int, st store.Store) error {
		cs, err := st.Counts(ctx)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			key := k{c.BizID, c.Status, c.SendStatus}
			o, ok := sum[key]
			if ok {
				c.N += o.N
				c.Scheduled += o.Scheduled
				if !o.Oldest.IsZero() && (c.Oldest.IsZero() || o.Oldest.Before(c.Oldest)) {
					c.Oldest = o.Oldest
				}
			}
			sum[key] = c
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sharded counts: %w", err)
	}
	out := make([]store.Count, 0, len(sum))
	for _, c := range sum {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.Count) int {
		return cmp.Or(cmp.Compare(a.BizID, b.BizID), cmp.Compare(a.Status, b.Status), cmp.Compare(a.SendStatus, b.SendStatus))
	})
	return out, nil
}

// OldestPrepared implements store.Store: the oldest over the shards.
func (s *Store) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	var mu sync.Mutex
	out := map[string]time.Time{}
	err := s.each(func(_ int, st store.Store) error {
		m, err := st.OldestPrepared(ctx)
		mu.Lock()
		defer mu.Unlock()
		for biz, t := range m {
			if o, ok := out[biz]; !ok || t.Before(o) {
				out[biz] = t
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sharded oldest prepared: %w", err)
	}
	return out, nil
}

// SendBacklog implements store.Backlogger: counts summed, the oldest due
// kept. Shards that are not Backloggers count nothing.
func (s *Store) SendBacklog(ctx context.Context) ([]store.BizBacklog, error) {
	var mu sync.Mutex
	per := map[string]*store.BizBacklog{}
	err := s.each(func(_ int, st store.Store) error {
		bl, ok := st.(store.Backlogger)
		if !ok {
			return nil
		}
		bs, err := bl.SendBacklog(ctx)
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bs {
			o := per[b.BizID]
			if o == nil {
				o = &store.BizBacklog{BizID: b.BizID}
				per[b.BizID] = o
			}
			o.Pending += b.Pending
			o.Due += b.Due
			if !b.OldestDue.IsZero() && (o.OldestDue.IsZero() || b.OldestDue.Before(o.OldestDue)) {
				o.OldestDue = b.OldestDue
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sharded send backlog: %w", err)
	}
	out := make([]store.BizBacklog, 0, len(per))
	for _, biz := range slices.Sorted(maps.Keys(per)) {
		out = append(out, *per[biz])
	}
	return out, nil
}

// OrphanCommits implements store.Store: counts summed, the oldest kept.
func (s *Store) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	var mu sync.Mutex
	out := map[string]store.OrphanStat{}
	err := s.each(func(_ int, st store.Store) error {
		m, err := st.OrphanCommits(ctx)
		mu.Lock()
		defer mu.Unlock()
		for biz, o := range m {
			cur, ok := out[biz]
			cur.N += o.N
			if !ok || o.Oldest.Before(cur.Oldest) {
				cur.Oldest = o.Oldest
			}
			out[biz] = cur
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sharded orphan commits: %w", err)
	}
	return out, nil
}

// Audit implements store.Store: the message's shard holds its records
// (AddAudit and operator actions are routed by key).
func (s *Store) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	sh := s.m.Shard(bizID, key)
	es, err := s.shards[sh].Store.Audit(ctx, bizID, key)
	for i := range es {
		if es[i].ID != 0 {
			es[i].ID = outerID(es[i].ID, sh)
		}
	}
	return es, err
}

// AddAudit implements store.Store, on the message's shard.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	return s.shards[s.m.Shard(e.BizID, e.Key)].Store.AddAudit(ctx, e)
}

// auditScanPage is how many records a shard is read at a time when paging
// AuditLog past newer records of other shards.
const auditScanPage = 500

// AuditLog implements store.Store: the shards' records merged newest first
// (time, then ID). A BeforeID page starts after that record in this order;
// each shard is read past its records that come before it.
func (s *Store) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 || len(s.shards) == 1 {
		es, err := s.shards[0].Store.AuditLog(ctx, q) // the inner store validates
		for i := range es {
			es[i].ID = outerID(es[i].ID, 0)
		}
		return es, err
	}
	var cutAt time.Time
	var cutID int64
	cutShard, cutInner := -1, int64(0)
	if q.BeforeID > 0 {
		inner, sh, err := s.shardOf(q.BeforeID)
		if err != nil {
			return nil, fmt.Errorf("sharded audit log: %w", err)
		}
		cutShard, cutInner, cutID = sh, inner, q.BeforeID
		// The cursor record's time (or, if it was purged, the next older's).
		es, err := s.shards[sh].Store.AuditLog(ctx, store.AuditQuery{BeforeID: inner + 1, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("sharded audit log: shard %d: %w", sh, err)
		}
		if len(es) == 0 {
			cutAt = time.Time{}
		} else {
			cutAt = es[0].At
		}
	}
	before := func(e store.AuditEntry) bool { // after the cursor in merged order
		if cutID == 0 {
			return true
		}
		if !e.At.Equal(cutAt) {
			return e.At.Before(cutAt)
		}
		return e.ID < cutID
	}
	got := make([][]store.AuditEntry, len(s.shards))
	err := s.each(func(i int, st store.Store) error {
		qq := q
		qq.BeforeID = 0
		if i == cutShard {
			qq.BeforeID = cutInner
		}
		if cutID != 0 && i != cutShard {
			qq.Limit = max(q.Limit, auditScanPage)
		}
		for {
			es, err := st.AuditLog(ctx, qq)
			if err != nil {
				return err
			}
			for _, e := range es {
				e.ID = outerID(e.ID, i)
				if before(e) {
					got[i] = append(got[i], e)
				}
			}
			if len(es) < qq.Limit || len(got[i]) >= q.Limit {
				return nil
			}
			qq.BeforeID = es[len(es)-1].ID
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sharded audit log: %w", err)
	}
	var out []store.AuditEntry
	for _, es := range got {
		out = append(out, es...)
	}
	slices.SortFunc(out, func(a, b store.AuditEntry) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.ID, a.ID))
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// PurgeAudit implements store.Store, shard after shard within limit.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.drain(limit, func(st store.Store, n int) (int, error) { return st.PurgeAudit(ctx, before, n) })
}

// Purge implements store.Store, shard after shard within limit.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.drain(limit, func(st store.Store, n int) (int, error) { return st.Purge(ctx, before, n) })
}

func (s *Store) drain(limit int, fn func(store.Store, int) (int, error)) (int, error) {
	if limit < 1 {
		return fn(s.shards[0].Store, limit) // the inner store validates
	}
	total := 0
	for i, sh := range s.shards {
		if total >= limit {
			break
		}
		n, err := fn(sh.Store, limit-total)
		total += n
		if err != nil {
			return total, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return total, nil
}

// RetryNowBizID implements store.Store on every shard.
func (s *Store) RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error) {
	var total atomic.Int64
	err := s.each(func(_ int, st store.Store) error {
		n, err := st.RetryNowBizID(ctx, bizID, who)
		total.Add(int64(n))
		return err
	})
	if err != nil {
		return int(total.Load()), fmt.Errorf("sharded retry now: %w", err)
	}
	return int(total.Load()), nil
}

// Close implements store.Store: it closes every shard's store, then runs
// its Close.
func (s *Store) Close() error {
	var errs []error
	for i, sh := range s.shards {
		if err := sh.Store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, err))
		}
		if sh.Close != nil {
			sh.Close()
		}
	}
	return errors.Join(errs...)
}

// BlockedKeys implements store.Orderer for a store of one shard (ordering
// is not kept across several: ErrOrderAcrossShards); with several it
// returns ErrOrderAcrossShards.
func (s *Store) BlockedKeys(ctx context.Context, bizID string, limit int) ([]store.BlockedKey, error) {
	if len(s.shards) > 1 {
		return nil, ErrOrderAcrossShards
	}
	o, ok := s.shards[0].Store.(store.Orderer)
	if !ok {
		return nil, fmt.Errorf("sharded blocked keys: shard 0 does not keep per-key order")
	}
	bs, err := o.BlockedKeys(ctx, bizID, limit)
	for i := range bs {
		bs[i].Head.ID = outerID(bs[i].Head.ID, 0)
	}
	return bs, err
}
