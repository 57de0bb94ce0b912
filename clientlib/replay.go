package clientlib

import (
	"container/heap"
	"sync"
	"time"
)

// replayCache remembers accepted signatures until they expire (the end of
// their timestamp window), holding at most max of them: when full, the one
// nearest its expiry is forgotten first. Safe for concurrent use.
type replayCache struct {
	mu   sync.Mutex
	max  int
	keys map[string]struct{}
	exp  expiryHeap
}

func newReplayCache(maxEntries int) *replayCache {
	return &replayCache{max: maxEntries, keys: make(map[string]struct{})}
}

// seen reports whether key was recorded before and has not expired by now;
// if not, it records key until exp.
func (c *replayCache) seen(key string, exp, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.exp) > 0 && c.exp[0].exp.Before(now) {
		delete(c.keys, heap.Pop(&c.exp).(expiry).key)
	}
	if _, ok := c.keys[key]; ok {
		return true
	}
	for len(c.exp) >= c.max {
		delete(c.keys, heap.Pop(&c.exp).(expiry).key)
	}
	c.keys[key] = struct{}{}
	heap.Push(&c.exp, expiry{key: key, exp: exp})
	return false
}

// len is the number of signatures remembered.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

type expiry struct {
	key string
	exp time.Time
}

// expiryHeap is a min-heap of expiries.
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].exp.Before(h[j].exp) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
