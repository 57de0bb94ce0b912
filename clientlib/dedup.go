package clientlib

import (
	"container/list"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// RecordID returns the message id a forwarded record carries in its ec-id
// header ("bizID:messageKey"), and false if it has none.
func RecordID(r *kgo.Record) (string, bool) {
	for i := range r.Headers {
		if r.Headers[i].Key == envelope.HeaderID {
			return string(r.Headers[i].Value), true
		}
	}
	return "", false
}

// DeduperOption configures a Deduper.
type DeduperOption interface{ applyDeduper(*Deduper) }

type deduperOptionFunc func(*Deduper)

func (f deduperOptionFunc) applyDeduper(d *Deduper) { f(d) }

// WithTTL makes a Deduper forget an id this long after it was first seen
// (default: never, only when the size bound pushes it out).
func WithTTL(ttl time.Duration) DeduperOption {
	return deduperOptionFunc(func(d *Deduper) { d.ttl = ttl })
}

// WithDeduperClock sets the clock used for WithTTL (default time.Now).
func WithDeduperClock(now func() time.Time) DeduperOption {
	return deduperOptionFunc(func(d *Deduper) { d.now = now })
}

// Deduper remembers the ids of recently seen messages so that a consumer
// can drop redeliveries (the center forwards at least once). It holds at
// most size ids, dropping the least recently seen first, and, with WithTTL,
// forgets ids after a while. It is safe for concurrent use.
//
// Memory is per consumer process: after a restart or a partition moving to
// another consumer, duplicates can pass; a consumer that must never process
// twice keeps the ids in its own database, in the transaction of its work:
// package clientlib/inbox does that.
type Deduper struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // front: most recently seen
	ids   map[string]*list.Element
}

type seenID struct {
	id    string
	first time.Time
}

// NewDeduper returns a Deduper holding up to size ids (at least 1).
func NewDeduper(size int, opts ...DeduperOption) *Deduper {
	d := &Deduper{size: max(size, 1), order: list.New(), ids: make(map[string]*list.Element)}
	for _, o := range opts {
		o.applyDeduper(d)
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

// Seen reports whether id was seen before (and is still remembered); if
// not, it remembers id. If processing the message then fails, call Forget
// so that its redelivery is not dropped.
func (d *Deduper) Seen(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if el, ok := d.ids[id]; ok {
		s := el.Value.(*seenID)
		if d.ttl <= 0 || now.Sub(s.first) < d.ttl {
			d.order.MoveToFront(el)
			return true
		}
		// Expired: seen anew from now on.
		s.first = now
		d.order.MoveToFront(el)
		return false
	}
	d.ids[id] = d.order.PushFront(&seenID{id: id, first: now})
	for d.order.Len() > d.size {
		old := d.order.Back()
		d.order.Remove(old)
		delete(d.ids, old.Value.(*seenID).id)
	}
	return false
}

// SeenRecord is Seen for the ec-id of a forwarded record. A record without
// ec-id is never a duplicate.
func (d *Deduper) SeenRecord(r *kgo.Record) bool {
	id, ok := RecordID(r)
	return ok && d.Seen(id)
}

// Forget drops id, so that it counts as new when seen again.
func (d *Deduper) Forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.ids[id]; ok {
		d.order.Remove(el)
		delete(d.ids, id)
	}
}

// Len returns how many ids are remembered (expired ones included until they
// are pushed out or seen again).
func (d *Deduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}
