package sqlcore

import (
	"context"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Reads are the store.Store reads of a Dialect on a DB, as methods a
// driver's store embeds. Create them with NewReads.
type Reads[T any] struct {
	d   *Dialect[T]
	db  DB
	now func() time.Time
}

// NewReads returns the reads of d on db; now is the store's clock (nil:
// time.Now), which tells SCHEDULED messages in Counts.
func NewReads[T any](d *Dialect[T], db DB, now func() time.Time) Reads[T] {
	return Reads[T]{d, db, Clock(now)}
}

// Get implements store.Store.
func (r Reads[T]) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	return r.d.Get(ctx, r.db, bizID, key)
}

// List implements store.Store.
func (r Reads[T]) List(ctx context.Context, f store.Filter) (store.Page, error) {
	return r.d.List(ctx, r.db, f)
}

// Counts implements store.Store.
func (r Reads[T]) Counts(ctx context.Context) ([]store.Count, error) {
	return r.d.Counts(ctx, r.db, r.now())
}

// SendBacklog implements store.Backlogger.
func (r Reads[T]) SendBacklog(ctx context.Context) ([]store.BizBacklog, error) {
	return r.d.SendBacklog(ctx, r.db, r.now())
}

// OldestPrepared implements store.Store.
func (r Reads[T]) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	return r.d.OldestPrepared(ctx, r.db)
}

// OrphanCommits implements store.Store.
func (r Reads[T]) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	return r.d.OrphanCommits(ctx, r.db)
}

// Audit implements store.Store.
func (r Reads[T]) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	return r.d.Audit(ctx, r.db, bizID, key)
}

// AuditLog implements store.Store.
func (r Reads[T]) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	return r.d.AuditLog(ctx, r.db, q)
}
