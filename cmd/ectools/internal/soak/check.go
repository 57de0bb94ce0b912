package soak

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// collector reads the business topic from the start for the whole run.
type collector struct {
	mu    sync.Mutex
	byKey map[string]int // forwarded records per message key
	// firstAt is when the collector read each message's first record.
	firstAt map[string]time.Time
	// byOrder lists, per order key, the message keys of its forwarded
	// records in the order read (duplicates included). One order key's
	// records share a forward key, so one partition: read order is their
	// order in the topic.
	byOrder map[string][]string
	bad     []string // records whose ec-id or payload do not match
	records int
	offsets map[int32]int64 // next offset per partition
	cl      *kgo.Client
	done    chan struct{}
}

func startCollector(brokers []string) (*collector, context.CancelFunc, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(businessTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, nil, fmt.Errorf("collector: %w", err)
	}
	c := &collector{byKey: map[string]int{}, firstAt: map[string]time.Time{}, byOrder: map[string][]string{}, offsets: map[int32]int64{}, cl: cl, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(c.add)
		}
	}()
	stop := func() {
		cancel()
		<-c.done
		cl.Close()
	}
	return c, stop, nil
}

func (c *collector) add(r *kgo.Record) {
	var id string
	for _, h := range r.Headers {
		if h.Key == envelope.HeaderID {
			id = string(h.Value)
		}
	}
	key, ok := strings.CutPrefix(id, bizID+":")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records++
	c.offsets[r.Partition] = r.Offset + 1
	orderKey, ordered := strings.CutPrefix(string(r.Key), orderFKPrefix)
	if !ok || string(r.Value) != string(payloadOf(key)) || (string(r.Key) != "fk-"+key && !ordered) {
		c.bad = append(c.bad, fmt.Sprintf("partition %d offset %d: ec-id %q key %q value %.40q", r.Partition, r.Offset, id, r.Key, r.Value))
		return
	}
	if c.byKey[key] == 0 {
		c.firstAt[key] = time.Now()
	}
	c.byKey[key]++
	if ordered {
		c.byOrder[orderKey] = append(c.byOrder[orderKey], key)
	}
}

func (c *collector) forwarded(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[key]
}

// caughtUp tells whether the collector has read up to the end offsets.
func (c *collector) caughtUp(ctx context.Context, adm *kadm.Client) bool {
	ends, err := adm.ListEndOffsets(ctx, businessTopic)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset > c.offsets[o.Partition] {
			ok = false
		}
	})
	return ok
}

// row is what the checker reads of a message in the store.
type row struct {
	status   int
	sendStat int
	hasBody  bool
	attempts int
	created  time.Time
	orderKey string
	orderSeq int64
	// ahead: written ahead and confirmed (sent_ahead_offset set).
	ahead bool
}

func readStore(ctx context.Context, dsn string) (map[string]row, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("read store: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT message_key, status, send_status, has_body, verify_attempts, created_at, order_key, order_seq,
		sent_ahead_offset IS NOT NULL FROM eventcenter_messages WHERE biz_id = $1`, bizID)
	if err != nil {
		return nil, fmt.Errorf("read store: %w", err)
	}
	out := map[string]row{}
	for rows.Next() {
		var k string
		var r row
		if err := rows.Scan(&k, &r.status, &r.sendStat, &r.hasBody, &r.attempts, &r.created, &r.orderKey, &r.orderSeq, &r.ahead); err != nil {
			return nil, fmt.Errorf("read store: %w", err)
		}
		out[k] = r
	}
	return out, rows.Err()
}

// Status numbers of the store (docs/state-machine.md, "States").
const (
	stPrepared     = 1
	stCommitted    = 2
	stRolledBack   = 3
	stVerifyFailed = 4
)

// Invariant is one checked promise and its violations.
type Invariant struct {
	Name       string
	Violations int
	Examples   []string
}

func (inv *Invariant) fail(format string, args ...any) {
	inv.Violations++
	if len(inv.Examples) < 10 {
		inv.Examples = append(inv.Examples, fmt.Sprintf(format, args...))
	}
}

// pending tells what still has to happen before the run has converged:
// committed messages not yet forwarded and rows still PREPARED.
func pending(msgs map[string]message, col *collector, rows map[string]row) (unforwarded, prepared int) {
	for k, m := range msgs {
		r, inStore := rows[k]
		if m.decision == committed && !m.incomplete && col.forwarded(k) == 0 && (!inStore || r.status != stVerifyFailed) {
			if m.envelopeSent || inStore {
				unforwarded++
			}
		}
	}
	for _, r := range rows {
		if r.status == stPrepared {
			prepared++
		}
	}
	return unforwarded, prepared
}

// check evaluates the invariants at time now; rep carries the fault
// errors and unexpected exits of the run, which are violations too.
func check(now time.Time, msgs map[string]message, calls map[string]int, col *collector, rows map[string]row, rep *Report) {
	lost := &Invariant{Name: "every committed message forwarded at least once"}
	leaked := &Invariant{Name: "no rolled-back (or undecided) message forwarded or committed"}
	stale := &Invariant{Name: "no message PREPARED beyond its last scheduled check-back"}
	dup := &Invariant{Name: "no message forwarded twice except with the same ec-id"}
	over := &Invariant{Name: fmt.Sprintf("check-back calls per message <= attempt limit (%d)", checkMaxAttempts)}
	bound := scheduleBound() + 60*time.Second
	for k, m := range msgs {
		r, inStore := rows[k]
		n := col.forwarded(k)
		rep.Messages++
		rep.Kinds[kindNames[m.kind]]++
		switch m.decision {
		case committed:
			rep.Committed++
			switch {
			case m.incomplete:
				rep.Incomplete++
			case n > 0:
			case inStore && r.status == stVerifyFailed && !m.envelopeSent:
				// The producer's decision reached the center only through
				// check-back, which gave up: parked for an operator.
				rep.ParkedCommitted++
			case !m.envelopeSent && !inStore:
				// Neither envelope reached the broker.
				rep.NeverArrived++
			default:
				status := "absent"
				if inStore {
					status = fmt.Sprint(r.status)
				}
				lost.fail("%s (%s, commit envelope sent %v, store status %s) not forwarded", k, kindNames[m.kind], m.envelopeSent, status)
			}
		default:
			rep.RolledBack++
			if n > 0 {
				leaked.fail("%s (%s) decided %s but forwarded %d times", k, kindNames[m.kind], decisionName(m.decision), n)
			} else if inStore && r.status == stCommitted {
				leaked.fail("%s (%s) decided %s but COMMITTED in the store", k, kindNames[m.kind], decisionName(m.decision))
			}
			if inStore && r.status == stVerifyFailed {
				rep.VerifyFailed++
			}
		}
		if inStore && r.status == stPrepared && (now.Sub(r.created) > bound || r.attempts >= checkMaxAttempts) {
			stale.fail("%s PREPARED %s after creation with %d check-backs", k, now.Sub(r.created).Round(time.Second), r.attempts)
		}
		// The claim counts the attempt, so a call in flight when its
		// center is SIGKILLed counts too: no allowance for kills.
		if calls[k] > checkMaxAttempts {
			over.fail("%s (%s) checked back %d times", k, kindNames[m.kind], calls[k])
		}
	}
	col.mu.Lock()
	for _, b := range col.bad {
		dup.fail("%s", b)
	}
	rep.ForwardedRecords = col.records
	rep.ForwardedIDs = len(col.byKey)
	col.mu.Unlock()
	for k, n := range col.byKey {
		if _, ok := msgs[k]; !ok {
			dup.fail("forwarded %s, which no producer sent (%d records)", k, n)
		}
	}
	for k, n := range calls {
		rep.CheckbackCalls += int64(n)
		if n > rep.MaxCallsPerMessage {
			rep.MaxCallsPerMessage = n
		}
		if _, ok := msgs[k]; !ok {
			over.fail("check-back for unknown key %q", k)
		}
	}
	order := checkOrder(msgs, col, rows)
	col.mu.Lock()
	rep.OrderKeys = len(col.byOrder)
	for _, ks := range col.byOrder {
		rep.OrderedRecords += len(ks)
	}
	col.mu.Unlock()
	for _, r := range rows {
		if r.ahead {
			rep.OrderedAhead++
		}
	}
	faults := &Invariant{Name: "every fault injected and undone as planned"}
	for _, e := range rep.FaultErrors {
		faults.fail("%s", e)
	}
	fenced := &Invariant{Name: "a center cut off sends nothing once its leases ran out"}
	for _, e := range rep.Unfenced {
		fenced.fail("%s", e)
	}
	exits := &Invariant{Name: "no center exited unless the soak killed or stopped it"}
	for _, e := range rep.UnexpectedExits {
		exits.fail("%s", e)
	}
	rep.Invariants = []*Invariant{lost, leaked, stale, dup, over, order, faults, fenced, exits}
}

// checkOrder checks per-key order: for every order key, a record of the
// message with sequence s (the order the center applied the COMMITs) is
// read only after the first record of every message of the key with a
// lower sequence. So the first occurrences are in commit order, and a
// duplicate never comes before its predecessor's first delivery.
func checkOrder(msgs map[string]message, col *collector, rows map[string]row) *Invariant {
	inv := &Invariant{Name: "per order key: first deliveries in commit order, no record before its predecessors' first"}
	col.mu.Lock()
	defer col.mu.Unlock()
	for orderKey, keys := range col.byOrder {
		// The key's sequenced messages, by sequence.
		var seqs []int64
		bySeq := map[int64]string{}
		for k, r := range rows {
			if r.orderKey == orderKey && r.orderSeq > 0 {
				seqs = append(seqs, r.orderSeq)
				bySeq[r.orderSeq] = k
			}
		}
		slices.Sort(seqs)
		rank := make(map[string]int, len(seqs))
		for i, s := range seqs {
			rank[bySeq[s]] = i
		}
		seen := make([]bool, len(seqs))
		prefix := 0 // seen[:prefix] are all true
		for i, k := range keys {
			if msgs[k].orderKey != orderKey {
				inv.fail("%s forwarded with the forward key of order key %s, which it does not have", k, orderKey)
				continue
			}
			rk, ok := rank[k]
			if !ok {
				inv.fail("%s (order key %s) forwarded but has no order sequence in the store", k, orderKey)
				continue
			}
			if rk > prefix {
				inv.fail("order key %s: %s (sequence %d) read at position %d before %s (sequence %d) was ever read",
					orderKey, k, seqs[rk], i, bySeq[seqs[prefix]], seqs[prefix])
			}
			seen[rk] = true
			for prefix < len(seen) && seen[prefix] {
				prefix++
			}
		}
	}
	return inv
}

func decisionName(d decision) string {
	switch d {
	case committed:
		return "commit"
	case rolledBack:
		return "rollback"
	}
	return "nothing (never decided)"
}

// afterHealWindow is how long after a fault's heal a message committed
// still counts toward the fault's latency (AfterHeal), unless another
// fault began meanwhile.
const afterHealWindow = 5 * time.Second

// HealLatency is the worst commit-to-forward latency of the messages
// committed during the faults of one kind or within afterHealWindow
// after their heal: how long the system took to catch up.
type HealLatency struct {
	Kind     string
	Faults   int
	Messages int
	Worst    time.Duration
	WorstKey string
	// CommittedIn is when the worst message was committed, from the
	// start of its fault; AfterHeal when it was forwarded, from the heal.
	CommittedIn, AfterHeal time.Duration
}

// afterHeal computes the commit-to-forward latencies of the committed
// messages whose COMMIT reached the broker (decided to first forwarded
// record read), per fault kind (the episodes) and over all.
func afterHeal(episodes []episode, msgs map[string]message, col *collector) ([]HealLatency, time.Duration) {
	col.mu.Lock()
	defer col.mu.Unlock()
	type lat struct {
		key       string
		committed time.Time
		d         time.Duration
	}
	var all []lat
	var worst time.Duration
	for k, m := range msgs {
		at, ok := col.firstAt[k]
		if m.decision != committed || !m.envelopeSent || !ok || m.decidedAt.IsZero() {
			continue
		}
		l := lat{key: k, committed: m.decidedAt, d: at.Sub(m.decidedAt)}
		all = append(all, l)
		worst = max(worst, l.d)
	}
	// Faults run one after another; a message counts toward the last one
	// that began before it was committed, if it was committed before that
	// one's heal plus the window.
	eps := append([]episode(nil), episodes...)
	sort.Slice(eps, func(i, j int) bool { return eps[i].began.Before(eps[j].began) })
	byKind := map[string]*HealLatency{}
	for _, e := range eps {
		h := byKind[e.kind]
		if h == nil {
			h = &HealLatency{Kind: e.kind}
			byKind[e.kind] = h
		}
		h.Faults++
	}
	for _, l := range all {
		i := sort.Search(len(eps), func(i int) bool { return eps[i].began.After(l.committed) }) - 1
		if i < 0 || l.committed.After(eps[i].healed.Add(afterHealWindow)) {
			continue
		}
		e := eps[i]
		h := byKind[e.kind]
		h.Messages++
		if l.d > h.Worst {
			h.Worst, h.WorstKey = l.d, l.key
			h.CommittedIn = l.committed.Sub(e.began)
			h.AfterHeal = l.committed.Add(l.d).Sub(e.healed)
		}
	}
	out := make([]HealLatency, 0, len(byKind))
	for _, h := range byKind {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, worst
}
