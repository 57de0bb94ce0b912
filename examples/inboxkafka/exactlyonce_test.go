package main

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
	"github.com/eventcenter/eventcenter/examples/internal/inboxtest"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
)

const topic = "orders"

// forwardAll produces n messages as the center's Kafka target forwards
// them (forwarder.BuildRecord: ec-id header, forward key), then redeliveries
// of some of them again (the center forwards at least once: a send whose
// acknowledgement was lost is sent again). It returns the amount each id
// must be credited once.
// It also returns the last offset of each partition.
func forwardAll(t *testing.T, c *kfake.Cluster, n int, rng *rand.Rand) (want map[string]int64, end map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer cl.Close()
	want = make(map[string]int64, n)
	var recs []*kgo.Record
	for i := range n {
		key := "o-" + strconv.Itoa(i)
		amount := int64(1 + rng.IntN(1000))
		fr := forwarder.BuildRecord(&state.Message{BizID: "order", Key: key, Topic: topic, ForwardKey: key, Payload: []byte(strconv.FormatInt(amount, 10))})
		r := &kgo.Record{Topic: fr.Topic, Key: []byte(fr.Key), Value: fr.Value}
		for _, h := range fr.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		want[fr.ID] = amount
		recs = append(recs, r)
		// An injected redelivery of an earlier message, now and then.
		if rng.IntN(10) == 0 {
			dup := *recs[rng.IntN(len(recs))]
			recs = append(recs, &dup)
		}
	}
	res := cl.ProduceSync(t.Context(), recs...)
	require.NoError(t, res.FirstErr())
	end = map[int32]int64{}
	for _, r := range res {
		end[r.Record.Partition] = max(end[r.Record.Partition], r.Record.Offset)
	}
	return want, end
}

// killer decides where a consumer run dies: after kill events (a record's
// apply or its commit), in one of three ways.
type killer struct {
	mu     sync.Mutex
	events int // left before the kill; < 0: never
	mode   int
	cancel context.CancelFunc
	killed bool
}

var errKilled = errors.New("killed")

// at is called at the kill points of mode m; it reports whether to die.
func (k *killer) at(m int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.events < 0 || k.killed {
		return false
	}
	if k.events > 0 {
		k.events--
		return false
	}
	if m != k.mode {
		return false
	}
	k.killed = true
	k.cancel()
	return true
}

// progress records, across consumer runs, the last offset handled in each
// partition; all records are handled once every partition's end was.
type progress struct {
	mu   sync.Mutex
	last map[int32]int64
	end  map[int32]int64 // last offset of each partition
}

func (p *progress) handled(r *kgo.Record) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[r.Partition] = max(p.last[r.Partition], r.Offset)
	return p.doneLocked()
}

func (p *progress) done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.doneLocked()
}

func (p *progress) doneLocked() bool {
	for part, end := range p.end {
		if last, ok := p.last[part]; !ok || last < end {
			return false
		}
	}
	return true
}

// chaos consumes everything forwardAll produced with consumers killed at
// random points: kills consumer runs in a row die (an apply that fails, a
// context cancelled inside the transaction, a context cancelled after the
// database commit but before the offset commit), each without committing
// Kafka offsets, and a last run finishes. groupPerRun gives each run an
// inbox of its own group, as if the consumer forgot what it applied (the
// control that shows the test sees duplicates).
func chaos(t *testing.T, d inbox.Dialect, n, kills int, groupPerRun bool, seed uint64) *sql.DB {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 17))
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	db := inboxtest.DB(t, d)
	_, err = db.ExecContext(t.Context(), inboxtest.LedgerSchema(d))
	require.NoError(t, err)
	want, end := forwardAll(t, c, n, rng)
	prog := &progress{last: map[int32]int64{}, end: end}

	runs, skipped, aborted := 0, 0, 0
	for !prog.done() {
		runs++
		require.Less(t, runs, kills+20, "consumer runs do not finish")
		group := "billing"
		if groupPerRun {
			group += strconv.Itoa(runs)
		}
		in, err := inbox.New(d, group)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		k := &killer{events: -1, cancel: cancel}
		if runs <= kills {
			k.events, k.mode = rng.IntN(n/4+1), rng.IntN(3)
		}
		cl, err := NewClient(c.ListenAddrs(), topic, "billing")
		require.NoError(t, err)
		cons := &Consumer{Client: cl, DB: db, Inbox: in,
			Apply: func(ctx context.Context, tx *sql.Tx, r *kgo.Record) error {
				if k.at(0) {
					return errKilled // the transaction aborts
				}
				amount, err := strconv.ParseInt(string(r.Value), 10, 64)
				if err != nil {
					return err
				}
				if err := inboxtest.Apply(ctx, tx, d, inbox.KafkaID(r), amount); err != nil {
					return err
				}
				k.at(1) // cancelled inside the transaction: its commit fails
				return nil
			},
			Handled: func(r *kgo.Record, applied bool) {
				if !applied {
					skipped++ // Run calls Handled from its own goroutine only
				}
				k.at(2) // cancelled after the database commit, before the offset commit
				if prog.handled(r) {
					cancel()
				}
			},
		}
		err = cons.Run(ctx)
		cancel()
		cl.Close() // leaves the group without committing anything more
		if k.killed && k.mode < 2 {
			aborted++
		}
		if !k.killed && !prog.done() {
			require.NoError(t, err, "run %d ended without being killed", runs)
		}
	}
	t.Logf("%s: %d messages, %d consumer runs, %d transactions aborted by a kill, %d duplicates skipped", d, n, runs, aborted, skipped)

	ids, apps, twice := inboxtest.Ledger(t.Context(), t, db)
	require.Equal(t, int64(len(want)), ids, "every message applied")
	if !groupPerRun {
		require.Empty(t, twice, "messages applied more than once")
		require.Equal(t, int64(len(want)), apps)
		var sum, wantSum int64
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT SUM(amount) FROM ledger").Scan(&sum))
		for _, a := range want {
			wantSum += a
		}
		require.Equal(t, wantSum, sum)
		require.Positive(t, skipped, "the test must redeliver")
	}
	return db
}

// 10,000 forwarded messages (plus about 1,000 injected redeliveries), a
// consumer killed at random points 15 times and restarted without its
// uncommitted offsets: every effect is applied once, on both dialects.
func TestExactlyOnceUnderKills(t *testing.T) {
	t.Parallel()
	n := 10000
	if testing.Short() {
		n = 1000
	}
	for i, d := range inboxtest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			chaos(t, d, n, 15, false, uint64(i+1))
		})
	}
}

// The control: the same run, with a consumer that forgets what it applied
// at every restart, applies messages twice, so the test above would see it.
func TestWithoutInboxDuplicatesAreSeen(t *testing.T) {
	t.Parallel()
	for i, d := range inboxtest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			db := chaos(t, d, 1000, 5, true, uint64(i+100))
			_, apps, twice := inboxtest.Ledger(t.Context(), t, db)
			require.NotEmpty(t, twice, "restarts redeliver messages")
			require.Greater(t, apps, int64(1000)+int64(len(twice))-1)
		})
	}
}
