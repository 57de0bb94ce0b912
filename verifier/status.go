package verifier

import (
	"maps"
	"slices"
	"sync"
)

// BizStatus is one bizID's part of the verifier, for the operator's view
// (docs/checkback.md): its check-back limits and what waits for them.
type BizStatus struct {
	BizID string
	// Configured tells whether BizIDs names the bizID.
	Configured bool
	// Weight is its share of the claims and of the workers (at least 1).
	Weight int
	// Rate (check-backs per second, 0: none) and Burst are its rate limit.
	Rate  float64
	Burst int
	// Workers is the most calls it may have running (Config.BizWorkers;
	// fewer while others wait: its weighted share of Workers).
	Workers int
	// Waiting are its claimed check-backs waiting in memory for a worker
	// or a limit; Running its calls under way.
	Waiting, Running int
	// Throttled names the limit holding its check-backs back now ("rate"
	// or "workers"); empty when none.
	Throttled []string
}

// bizView is what the run goroutine shows of its per-bizID queues (at
// each change of a queue's length or hold; see countHeld).
type bizView struct {
	mu sync.Mutex
	m  map[string]*bizShown
}

type bizShown struct {
	st      *bizState // running is read atomically
	waiting int
	held    string
}

// show records q's length and hold for BizStatus.
func (w *bizView) show(q *bizQueue) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*bizShown{}
	}
	b := w.m[q.st.id]
	if b == nil {
		b = &bizShown{st: q.st}
		w.m[q.st.id] = b
	}
	b.waiting, b.held = q.len(), q.held
}

// forget drops a bizID's row (expireIdle).
func (w *bizView) forget(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, id)
}

// BizStatus returns the bizIDs configured or with check-backs claimed in
// the last ten minutes or so (see bizIdle), by bizID. Safe from any
// goroutine.
func (v *Verifier) BizStatus() []BizStatus {
	v.view.mu.Lock()
	shown := make(map[string]bizShown, len(v.view.m))
	for id, b := range v.view.m {
		shown[id] = *b
	}
	v.view.mu.Unlock()
	names := map[string]bool{}
	for id := range v.cfg.BizIDs {
		names[id] = true
	}
	for id := range shown {
		names[id] = true
	}
	out := make([]BizStatus, 0, len(names))
	for _, id := range slices.Sorted(maps.Keys(names)) {
		r, ok := v.biz[id]
		if !ok {
			r = v.biz[""]
		}
		s := BizStatus{BizID: id, Configured: ok, Weight: max(1, r.weight), Rate: r.rate, Burst: r.burst,
			Workers: v.cfg.BizWorkers, Throttled: []string{}}
		if b, ok := shown[id]; ok {
			s.Waiting, s.Running = b.waiting, int(b.st.running.Load())
			if b.held != "" {
				s.Throttled = append(s.Throttled, b.held)
			}
		}
		out = append(out, s)
	}
	return out
}
