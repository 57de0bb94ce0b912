package forwarder_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// stampTarget acknowledges every record at once and notes when each was
// sent and how many of flood's records were sent before it: the order of
// sends, which CPU contention does not change.
type stampTarget struct {
	mu    sync.Mutex
	at    map[string]time.Time // record id → sent
	flood map[string]int       // record id → flood's records sent before it
	sent  map[string]int       // bizID → records
}

func newStampTarget() *stampTarget {
	return &stampTarget{at: map[string]time.Time{}, flood: map[string]int{}, sent: map[string]int{}}
}

func (s *stampTarget) Send(_ context.Context, recs []forwarder.Record) []forwarder.Result {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.at[r.ID] = now
		s.flood[r.ID] = s.sent["flood"]
		biz, _, _ := strings.Cut(r.ID, ":")
		s.sent[biz]++
	}
	return make([]forwarder.Result, len(recs))
}

// sentOf returns how many of biz's records were sent.
func (s *stampTarget) sentOf(biz string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent[biz]
}

func (s *stampTarget) Close() error { return nil }

// BenchmarkNoisyNeighbourBacklog: bizID "flood" has a backlog of 200,000
// due messages in PostgreSQL (a target outage just ended, or a flood held
// by its limit); bizID "quiet" makes a message due every 5 ms (200/s:
// retries, scheduled messages, released handoffs, messages after a
// restart: what the claims serve) while the forwarder drains the
// backlog. It reports quiet's due-to-sent p50 and p99, its place in line
// (flood's messages sent between its due time and its send) p50 and p99,
// and flood's drain rate, with oldest-first claims and with fair claims
// (docs/fairness.md).
//
//	EVENTCENTER_TEST_POSTGRES=... go test ./forwarder -run '^$' -bench NoisyNeighbourBacklog -benchtime 1x -count 3
func BenchmarkNoisyNeighbourBacklog(b *testing.B) {
	backlog, queueSize := 200_000, 0
	if os.Getenv("BACKLOG") != "" {
		backlog, _ = strconv.Atoi(os.Getenv("BACKLOG"))
	}
	if os.Getenv("QUEUE_SIZE") != "" { // forwarder.Config.QueueSize
		queueSize, _ = strconv.Atoi(os.Getenv("QUEUE_SIZE"))
	}
	for _, fair := range []bool{false, true} {
		b.Run(map[bool]string{false: "oldest-first", true: "fair"}[fair], func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				st := pgBacklog(b, backlog)
				tick := time.NewTicker(5 * time.Millisecond)
				b.StartTimer()
				r := noisyRun(b, st, backlog, forwarder.Config{OldestFirst: !fair, QueueSize: queueSize}, func(int, *stampTarget) { <-tick.C })
				tick.Stop()
				b.StopTimer()
				b.ReportMetric(r.ms(.5), "quiet-p50-ms")
				b.ReportMetric(r.ms(.99), "quiet-p99-ms")
				b.ReportMetric(float64(r.place(.5)), "quiet-place-p50")
				b.ReportMetric(float64(r.place(.99)), "quiet-place-p99")
				b.ReportMetric(float64(backlog)/r.drained.Seconds(), "flood-msg/s")
				b.ReportMetric(float64(len(r.wait)), "quiet-msgs")
			}
		})
	}
}

// TestFairClaimsKeepQuietsPlace: a quiet bizID's messages fall due while
// a flood's backlog drains. Fair claims put each in the next claim, so
// what is sent ahead of it is at most what the forwarder had already
// claimed: what its queue held when the claim came and the workers'
// batches in flight. A fair scan claims again once the queue is down to a
// quarter of a claim, so that is within one claim at p99 with the default
// queue (4,096) as with a queue of a quarter of a claim. Oldest first, it
// waits for the backlog.
// Quiet's messages fall due as the flood is sent (one every 50 of flood's
// sends), not by a clock, so the machine's speed does not matter.
func TestFairClaimsKeepQuietsPlace(t *testing.T) {
	t.Parallel()
	const backlog, every = 10_000, 50
	claim := forwarder.DefaultClaimLimit
	for _, c := range []struct {
		fair     bool
		queue    int
		atMost   int // quiet's place p99
		moreThan int
	}{
		{fair: true, queue: claim / 4, atMost: claim},
		{fair: true, atMost: claim}, // the default queue
		{fair: false, queue: claim / 4, moreThan: 5 * claim},
	} {
		st := memStore{memstore.New(time.Now)}
		commitFlood(t, st, backlog)
		cfg := forwarder.Config{OldestFirst: !c.fair, QueueSize: c.queue, ScanInterval: 10 * time.Millisecond}
		r := noisyRun(t, st, backlog, cfg, func(i int, tg *stampTarget) {
			for n := tg.sentOf("flood"); n < (i+1)*every; n = tg.sentOf("flood") {
				if n >= backlog {
					time.Sleep(time.Millisecond) // drained: the run is ending
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		})
		require.Greater(t, len(r.places), 20, "quiet's messages while the flood drained")
		p99 := r.place(.99)
		t.Logf("fair %v, queue %d: quiet's place p50 %d, p99 %d, over %d messages", c.fair, c.queue, r.place(.5), p99, len(r.places))
		if c.atMost > 0 {
			require.LessOrEqual(t, p99, c.atMost, "fair %v, queue %d: quiet's place p99", c.fair, c.queue)
		} else {
			require.Greater(t, p99, c.moreThan, "fair %v, queue %d: quiet's place p99", c.fair, c.queue)
		}
	}
}

// commitFlood commits n messages of bizID "flood", due, in partitions 0-7.
func commitFlood(t *testing.T, st forwarder.Store, n int) {
	for i := 0; i < n; i += 1000 {
		var changes []store.Change
		for j := i; j < min(n, i+1000); j++ {
			key, at := fmt.Sprintf("k%d", j), time.Now()
			changes = append(changes,
				store.Change{BizID: "flood", Key: key, Partition: int32(j % 8), Event: state.Event{Kind: state.KindPrepare, At: at,
					Body: &state.Body{Payload: []byte("f"), Topic: "orders", CheckAfter: time.Minute}}},
				store.Change{BizID: "flood", Key: key, Partition: int32(j % 8), Event: state.Event{Kind: state.KindCommit, At: at}})
		}
		_, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes})
		require.NoError(t, err)
	}
}

// pgBacklog is a fresh PostgreSQL store with n due messages of bizID
// "flood", written in one statement.
func pgBacklog(b *testing.B, n int) forwarder.Store {
	ctx := b.Context()
	pool := pgtest.Pool(b)
	require.NoError(b, postgres.Migrate(ctx, pool))
	st, err := postgres.New(pool, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, decided_at, created_at, updated_at)
		SELECT 'flood', 'k' || g, g % 8, 2, true, convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '', 0,
			now() - interval '10 minutes' + g * interval '1 microsecond', now(), now(), now()
		FROM generate_series(1, $1) g`, n)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(b, err)
	return claimLog{st}
}

// noisyResult is what noisyRun measured of quiet's messages that fell
// due while flood's backlog drained.
type noisyResult struct {
	wait    []time.Duration // due → sent, sorted
	places  []int           // flood's messages sent between due and sent, sorted
	drained time.Duration   // flood's backlog, all sent
}

func (r noisyResult) ms(p float64) float64 {
	return float64(r.wait[int(p*float64(len(r.wait)-1))].Microseconds()) / 1000
}

func (r noisyResult) place(p float64) int { return r.places[int(p*float64(len(r.places)-1))] }

// noisyRun forwards from st, where flood's backlog of the given size is
// due, while bizID "quiet" commits messages due at once, each after
// pause(i) returns; it returns quiet's waits and places in line. cfg
// gets the target.
func noisyRun(tb testing.TB, st forwarder.Store, backlog int, cfg forwarder.Config, pause func(i int, t *stampTarget)) noisyResult {
	ctx := tb.Context()
	target := newStampTarget()
	owned := ingest.NewOwnership()
	owned.Assign(0, 1, 2, 3, 4, 5, 6, 7)
	cfg.Targets, cfg.Logger = map[string]forwarder.Target{"t": target}, slog.New(slog.DiscardHandler)
	f, err := forwarder.New(cfg, st, owned)
	require.NoError(tb, err)

	// quiet's messages: due at once, for the claims; when each fell due
	// and how many of flood's had been sent then.
	type due struct {
		at    time.Time
		flood int
	}
	dues := map[string]due{}
	var quietN int
	stop := make(chan struct{})
	done := make(chan struct{})
	began := time.Now()
	require.NoError(tb, f.Start(ctx))
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			pause(i, target)
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("q-%d", i)
			at := time.Now()
			_, err := st.Apply(ctx, store.ApplyRequest{Changes: []store.Change{
				{BizID: "quiet", Key: key, Partition: int32(i % 8), Event: state.Event{Kind: state.KindPrepare, At: at,
					Body: &state.Body{Payload: []byte("q"), Topic: "orders", CheckAfter: time.Minute}}},
				{BizID: "quiet", Key: key, Partition: int32(i % 8), Event: state.Event{Kind: state.KindCommit, At: at}},
			}})
			if err != nil {
				return
			}
			dues["quiet:"+key] = due{at, target.sentOf("flood")}
			quietN = i + 1
		}
	}()
	for target.sentOf("flood") < backlog {
		time.Sleep(10 * time.Millisecond) // polling the target's count
	}
	drained := time.Since(began)
	close(stop)
	<-done
	// The last quiet messages go too.
	require.Eventually(tb, func() bool { return target.sentOf("quiet") >= quietN }, time.Minute, 10*time.Millisecond)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(tb, f.Stop(sctx))

	// quiet's messages due while the backlog drained (the later ones wait
	// for the scan interval: there is no backlog left to claim). One sent
	// before its due count was read had no flood message ahead: place 0.
	var r noisyResult
	target.mu.Lock()
	for id, d := range dues {
		if d.flood < backlog {
			r.wait = append(r.wait, target.at[id].Sub(d.at))
			r.places = append(r.places, max(0, target.flood[id]-d.flood))
		}
	}
	target.mu.Unlock()
	slices.Sort(r.wait)
	slices.Sort(r.places)
	r.drained = drained
	return r
}

// claimLog logs each claim to stderr when CLAIMLOG is set.
type claimLog struct{ *postgres.Store }

func (c claimLog) ClaimSends(ctx context.Context, cl store.Claim) ([]state.Message, error) {
	t := time.Now()
	ms, err := c.Store.ClaimSends(ctx, cl)
	if os.Getenv("CLAIMLOG") != "" {
		fmt.Fprintf(os.Stderr, "claim limit %d got %d in %s err %v\n", cl.Limit, len(ms), time.Since(t), err)
	}
	return ms, err
}

// TestFairScanClaimsAgainWhenTheQueueDrains: a fair scan that finds the
// queue above its low water mark claims again when a worker drains it
// there, not at the next scan interval (an hour here): a backlog of ten
// claims drains.
func TestFairScanClaimsAgainWhenTheQueueDrains(t *testing.T) {
	t.Parallel()
	const backlog = 10 * forwarder.DefaultClaimLimit
	st := memStore{memstore.New(time.Now)}
	commitFlood(t, st, backlog)
	target := newStampTarget()
	owned := ingest.NewOwnership()
	owned.Assign(0, 1, 2, 3, 4, 5, 6, 7)
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"t": target}, ScanInterval: time.Hour, BusyScanInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler),
	}, st, owned)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, f.Stop(context.WithoutCancel(t.Context()))) })
	require.Eventually(t, func() bool { return target.sentOf("flood") == backlog }, time.Minute, 10*time.Millisecond,
		"the backlog drains through claims woken by the workers")
}
