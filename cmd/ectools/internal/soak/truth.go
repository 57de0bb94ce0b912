package soak

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventcenter/eventcenter/clientlib"
)

// decision is what the producer's local transaction did.
type decision int8

const (
	undecided decision = iota // local transaction still running (or never ends)
	committed
	rolledBack
)

// kind is how a message was produced.
type kind int8

const (
	kindCommit      kind = iota // Transact, local transaction commits
	kindRollback                // Transact, local transaction fails
	kindCommitFirst             // raw COMMIT, then raw PREPARE
	kindCheckback               // PREPARE only; decided later, the center must ask
	kindOrphan                  // PREPARE only; never decided (parks as VERIFY_FAILED)
)

var kindNames = map[kind]string{kindCommit: "commit", kindRollback: "rollback", kindCommitFirst: "commit-before-prepare",
	kindCheckback: "check-back", kindOrphan: "orphan"}

// message is the producer's record of one message.
type message struct {
	key      string
	kind     kind
	decision decision
	// envelopeSent: the COMMIT (or ROLLBACK) envelope was acknowledged by
	// the broker; without it the center learns the decision only by
	// check-back.
	envelopeSent bool
	// incomplete: a raw record could not be written before the run ended.
	incomplete bool
	// orderKey is the message's order key ("" for none).
	orderKey string
	// decidedAt is when the producer decided it (committed or rolled back).
	decidedAt time.Time
}

// truth is the producers' side: every message's local decision, and the
// check-back endpoint that answers from it and counts calls per message.
type truth struct {
	mu     sync.Mutex
	msgs   map[string]*message
	calls  map[string]int
	outage atomic.Bool
	// refused counts calls answered 503 during outages.
	refused atomic.Int64
}

func newTruth() *truth {
	return &truth{msgs: map[string]*message{}, calls: map[string]int{}}
}

func (t *truth) add(m *message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.msgs[m.key] = m
}

func (t *truth) update(key string, fn func(*message)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(t.msgs[key])
}

// handler is the check-back endpoint: clientlib's handler, answering from
// the truth; unknown keys (a PREPARE whose send failed, so the local
// transaction never ran) are rolled back.
func (t *truth) handler() http.Handler {
	inner := clientlib.NewCheckbackHandler(func(_ context.Context, _, key string) (clientlib.Decision, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		m, ok := t.msgs[key]
		switch {
		case !ok:
			return clientlib.DecisionRollback, nil
		case m.decision == committed:
			return clientlib.DecisionCommit, nil
		case m.decision == rolledBack:
			return clientlib.DecisionRollback, nil
		}
		return clientlib.DecisionUnknown, nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("messageKey")
		t.mu.Lock()
		t.calls[key]++
		t.mu.Unlock()
		if t.outage.Load() {
			t.refused.Add(1)
			http.Error(w, "producer down", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func (t *truth) snapshot() (map[string]message, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msgs := make(map[string]message, len(t.msgs))
	for k, m := range t.msgs {
		msgs[k] = *m
	}
	calls := make(map[string]int, len(t.calls))
	for k, v := range t.calls {
		calls[k] = v
	}
	return msgs, calls
}
