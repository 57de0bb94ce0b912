package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// kind is what the tool does with a message.
type kind uint8

const (
	kindCommit kind = iota
	kindRollback
	kindCheckback
)

// kindOf spreads the kinds evenly over the sequence (a low-discrepancy
// sequence: any window of messages has close to the asked mix).
func kindOf(seq int64, rollback, checkback float64) kind {
	u := float64(seq) * 0.6180339887498949
	u -= float64(int64(u))
	switch {
	case u < checkback:
		return kindCheckback
	case u < checkback+rollback:
		return kindRollback
	}
	return kindCommit
}

// pendingEntry is a message expected on the business topic: when its
// clock started (commit sent, or prepare sent for check-back messages).
type pendingEntry struct {
	at        int64 // unix nanoseconds
	checkback bool
	// afterSplit: its clock started after tracker.split was closed.
	afterSplit bool
}

const shards = 64

// tracker matches forwarded records with what the producers sent. Only
// messages still in flight are kept, so its memory is bounded by the
// backlog, not by the run's length.
type tracker struct {
	shards [shards]struct {
		mu sync.Mutex
		m  map[int64]pendingEntry
		_  [40]byte
	}
	pending atomic.Int64

	mu      sync.Mutex // guards the histograms and times below
	commitH hist
	// sendH is commit → the forwarder's produce call (the forwarded
	// record's timestamp, stamped by the center's Kafka client): the
	// center's share of commitH; the rest is broker and consumer.
	sendH hist
	// ackH is commit → the COMMIT envelope acknowledged by the broker
	// (the producer's share of commitH).
	ackH hist
	cbH  hist
	// split, when set, sends commitH's samples to beforeH, or to afterH
	// for the messages whose clock started after it was closed.
	split           <-chan struct{}
	beforeH, afterH hist
	// forwards and places, when set, keep what the place-in-line measure
	// needs (placeinline.go): every forward's timestamp, and each
	// committed message's commit and forward.
	forwards *forwardLog
	places   *placeLog
	firstFwd time.Time
	lastFwd  time.Time
	lastCB   time.Time

	forwarded  atomic.Int64
	duplicates atomic.Int64

	// Per second since the first send: messages expected (their clock
	// started) and forwarded, and the commit-to-forward latency (under mu).
	sentPS, fwdPS perSecond
	latPS         latPerSecond
}

func newTracker() *tracker {
	t := &tracker{}
	for i := range t.shards {
		t.shards[i].m = make(map[int64]pendingEntry)
	}
	return t
}

func (t *tracker) expect(seq int64, at time.Time, checkback bool) {
	s := &t.shards[seq%shards]
	s.mu.Lock()
	e := pendingEntry{at: at.UnixNano(), checkback: checkback}
	if t.split != nil {
		select {
		case <-t.split:
			e.afterSplit = true
		default:
		}
	}
	s.m[seq] = e
	s.mu.Unlock()
	t.pending.Add(1)
	t.sentPS.add(at)
}

// acked records how long a COMMIT took to be acknowledged from the
// moment its message's clock started.
func (t *tracker) acked(d time.Duration) {
	t.mu.Lock()
	t.ackH.add(d)
	t.mu.Unlock()
}

// forget drops an expectation (the send failed before anything could be
// forwarded).
func (t *tracker) forget(seq int64) {
	s := &t.shards[seq%shards]
	s.mu.Lock()
	_, ok := s.m[seq]
	delete(s.m, seq)
	s.mu.Unlock()
	if ok {
		t.pending.Add(-1)
	}
}

// seen records a forwarded record read at now, which the center produced
// at produced (its timestamp; zero if unknown); a record not expected
// (forwarded twice, or never sent by this run) counts as a duplicate.
func (t *tracker) seen(seq int64, now, produced time.Time) {
	if t.forwards != nil && !produced.IsZero() {
		t.forwards.add(produced) // duplicates went ahead too
	}
	s := &t.shards[seq%shards]
	s.mu.Lock()
	e, ok := s.m[seq]
	delete(s.m, seq)
	s.mu.Unlock()
	if !ok {
		t.duplicates.Add(1)
		return
	}
	t.pending.Add(-1)
	t.forwarded.Add(1)
	t.fwdPS.add(now)
	d := now.Sub(time.Unix(0, e.at))
	t.mu.Lock()
	if t.firstFwd.IsZero() {
		t.firstFwd = now
	}
	t.lastFwd = now
	if e.checkback {
		t.cbH.add(d)
		t.lastCB = now
	} else {
		t.commitH.add(d)
		t.latPS.add(now, d)
		if t.split != nil {
			if e.afterSplit {
				t.afterH.add(d)
			} else {
				t.beforeH.add(d)
			}
		}
		if !produced.IsZero() {
			t.sendH.add(max(produced.Sub(time.Unix(0, e.at)), 0))
			if t.places != nil {
				t.places.add(time.Unix(0, e.at), produced)
			}
		}
	}
	t.mu.Unlock()
}
