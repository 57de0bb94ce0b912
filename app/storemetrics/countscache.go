package storemetrics

import (
	"context"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/store"
)

// Defaults of CountsCache.
const (
	DefaultCountsMinAge = 5 * time.Second
	DefaultCountsFactor = 20
)

// CountsCache shares one store Counts among the periodic readers of the
// center (these gauges every 15 s, the console's trends every 5 s).
// Counts reads every row of the messages table, so its cost grows with
// the table: with 1,000,000 scheduled messages held in PostgreSQL one
// took 0.5 s on three processes of the 2-core bench machine
// (docs/performance.md, "Scheduled delivery"), every few seconds. A read
// gets the last result while it is younger than MinAge, or than Factor
// times the last query's duration, so the query takes a bounded share of
// the database's time (1/Factor) however large the table grows. Readers
// that must be exact (the admin API) read the store.
type CountsCache struct {
	st interface {
		Counts(context.Context) ([]store.Count, error)
	}
	now    func() time.Time
	minAge time.Duration
	factor int

	mu   sync.Mutex // held during the query: a concurrent reader waits for its result
	at   time.Time
	took time.Duration
	cs   []store.Count
}

// NewCountsCache returns a cache over st; minAge and factor 0 mean the
// defaults, now nil time.Now.
func NewCountsCache(st interface {
	Counts(context.Context) ([]store.Count, error)
}, minAge time.Duration, factor int, now func() time.Time,
) *CountsCache {
	if minAge <= 0 {
		minAge = DefaultCountsMinAge
	}
	if factor <= 0 {
		factor = DefaultCountsFactor
	}
	if now == nil {
		now = time.Now
	}
	return &CountsCache{st: st, now: now, minAge: minAge, factor: factor}
}

// Counts returns the last result while it is fresh enough, else queries
// the store. Errors are not kept.
func (c *CountsCache) Counts(ctx context.Context) ([]store.Count, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil && c.now().Sub(c.at) < max(c.minAge, time.Duration(c.factor)*c.took) {
		return c.cs, nil
	}
	start := c.now()
	cs, err := c.st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		cs = []store.Count{}
	}
	c.cs, c.at, c.took = cs, start, c.now().Sub(start)
	return cs, nil
}
