package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/state"
)

// scheduledMsg is one message of a scheduled run.
type scheduledMsg struct {
	id        string
	deliverAt time.Time
}

// produceScheduled commits n messages through clientlib, each with a
// deliver-at at random in [now+ahead, now+ahead+spread) when it is
// produced (so a slow producer never writes a deliver-at already past,
// which ingest would dead-letter), and cancels every 10th right after its
// commit. It returns the kept and the cancelled ones.
func produceScheduled(t *testing.T, e *env, prefix string, n int, ahead, spread time.Duration) (kept, cancelled []scheduledMsg) {
	t.Helper()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		at := time.Now().Add(ahead + time.Duration(rng.Int64N(int64(spread)))).Truncate(time.Millisecond)
		msg := clientlib.Message{BizID: "orders", Key: key, Payload: []byte("p-" + key),
			ForwardTopic: businessTopic, ForwardKey: "fk-" + key, DeliverAt: at}
		require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
		m := scheduledMsg{id: msg.ID(), deliverAt: at}
		if i%10 == 0 {
			require.NoError(t, p.Cancel(t.Context(), "orders", key))
			cancelled = append(cancelled, m)
			continue
		}
		kept = append(kept, m)
	}
	return kept, cancelled
}

// checkScheduled checks that every kept message arrived once, not before
// its deliver-at and at most late after it (so in deliver-at order within
// late), and that no cancelled one arrived.
func checkScheduled(t *testing.T, col *collector, kept, cancelled []scheduledMsg, late time.Duration) {
	t.Helper()
	var worst time.Duration
	for _, m := range kept {
		got := col.get(m.id)
		require.Len(t, got, 1, "%s forwarded once", m.id)
		lateness := got[0].At.Sub(m.deliverAt)
		require.GreaterOrEqual(t, lateness, -time.Millisecond, "%s sent %v before its deliver-at", m.id, -lateness)
		require.LessOrEqual(t, lateness, late, "%s sent %v after its deliver-at", m.id, lateness)
		worst = max(worst, lateness)
	}
	// In deliver-at order, within the allowed lateness.
	sorted := slices.Clone(kept)
	slices.SortFunc(sorted, func(a, b scheduledMsg) int { return a.deliverAt.Compare(b.deliverAt) })
	for i := 1; i < len(sorted); i++ {
		prev, cur := col.get(sorted[i-1].id)[0].At, col.get(sorted[i].id)[0].At
		require.False(t, cur.Add(late).Before(prev), "%s (due %v) sent more than %v before %s (due %v)",
			sorted[i].id, sorted[i].deliverAt, late, sorted[i-1].id, sorted[i-1].deliverAt)
	}
	for _, m := range cancelled {
		require.Empty(t, col.get(m.id), "cancelled %s was forwarded", m.id)
	}
	t.Logf("%d scheduled messages arrived, worst lateness %v; %d cancelled never did", len(kept), worst, len(cancelled))
}

// TestScheduledDelivery: 200 messages with deliver-at times spread over
// 3 s go through a real center (kfake + SQLite) and arrive not before
// their time, in deliver-at order within the scan interval (plus
// slack for a loaded machine); the cancelled ones never.
func TestScheduledDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	kept, cancelled := produceScheduled(t, e, "sched", 200, 2*time.Second, 3*time.Second)
	ids := make([]string, len(kept))
	for i, m := range kept {
		ids[i] = m.id
	}
	col.waitFor(t, ids, time.Minute)
	time.Sleep(time.Second) // a cancelled one would have come by now: the last deliver-at passed a second ago
	checkScheduled(t, col, kept, cancelled, time.Second)
	m, err := c.Store.Get(t.Context(), "orders", "sched-0")
	require.NoError(t, err)
	require.Equal(t, state.Cancelled, m.Status)
}

// TestScheduledRestart: messages that fell due while no center ran are
// sent once after start.
func TestScheduledRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	first := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	kept, cancelled := produceScheduled(t, e, "down", 50, 3*time.Second, time.Second)
	// Stored before the stop: the last one is in the store.
	require.Eventually(t, func() bool {
		_, err := first.Store.Get(t.Context(), "orders", "down-49")
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, first.Stop(ctx))
	stopped := time.Now()
	last := stopped
	for _, m := range append(slices.Clone(kept), cancelled...) {
		if m.deliverAt.After(last) {
			last = m.deliverAt
		}
	}
	time.Sleep(time.Until(last.Add(time.Second))) // all fall due while no center runs
	restarted := time.Now()
	e.startCenter(center.Options{})
	all := make([]string, len(kept))
	for i, m := range kept {
		all[i] = m.id
	}
	col.waitFor(t, all, time.Minute)
	time.Sleep(500 * time.Millisecond) // a duplicate would show by now
	afterRestart := 0
	for _, m := range kept {
		got := col.get(m.id)
		require.Len(t, got, 1, "%s sent once", m.id)
		require.False(t, got[0].At.Before(m.deliverAt), "%s sent before its deliver-at", m.id)
		if m.deliverAt.After(stopped) {
			require.False(t, got[0].At.Before(restarted), "%s sent while no center ran", m.id)
			afterRestart++
		}
	}
	require.NotZero(t, afterRestart, "some fell due while no center ran")
	t.Logf("%d of %d messages fell due while no center ran and were sent after the restart", afterRestart, len(kept))
	for _, m := range cancelled {
		require.Empty(t, col.get(m.id), "cancelled %s was forwarded", m.id)
	}
}

// TestScheduledDeliveryBinaryPostgres: the built binary (serve) on
// PostgreSQL and kfake. 1,000 messages, half with ec-delay and half with
// ec-deliver-at, spread over 10 s and produced by four producers at once,
// arrive each once, not before their deliver-at (as stored), in
// deliver-at order within the scan interval; the cancelled tenth never
// arrives.
func TestScheduledDeliveryBinaryPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	scan := e.cfg.Forward.ScanInterval
	e.cfg.HTTP.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	proc := startBinary(t, "serve", "--config", writeConfig(t, e.cfg))
	col := e.collect(businessTopic)
	// Produce once the center runs with scheduling on: its migrations can
	// wait many seconds on the concurrent index builds of the package's
	// other tests (CI once saw 23 s), and a deliver-at that passes while
	// the center is still migrating measures the migration, not the
	// scheduler.
	require.Eventually(t, func() bool { return strings.Contains(get(e.cfg.HTTP.Listen, "/readyz"), "scheduled delivery: on") },
		2*time.Minute, 50*time.Millisecond, "the center never became ready with scheduling on:\n%s", proc.output.String())

	const n, producers = 1000, 4
	var (
		mu           sync.Mutex
		kept, cancel []string
		wg           sync.WaitGroup
	)
	for w := range producers {
		wg.Go(func() {
			p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
			require.NoError(t, err)
			defer p.Close()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for i := w; i < n; i += producers {
				key := fmt.Sprintf("bin-%d", i)
				d := time.Second + time.Duration(rng.Int64N(int64(10*time.Second)))
				msg := clientlib.Message{BizID: "orders", Key: key, Payload: []byte("p-" + key), ForwardTopic: businessTopic, ForwardKey: "fk-" + key}
				if i%2 == 0 {
					msg.Delay = d
				} else {
					msg.DeliverAt = time.Now().Add(d)
				}
				if err := p.Transact(t.Context(), msg, func(context.Context) error { return nil }); err != nil {
					t.Errorf("transact %s: %v", key, err)
					return
				}
				mu.Lock()
				if i%10 == 0 {
					mu.Unlock()
					if err := p.Cancel(t.Context(), "orders", key); err != nil {
						t.Errorf("cancel %s: %v", key, err)
						return
					}
					mu.Lock()
					cancel = append(cancel, msg.ID())
				} else {
					kept = append(kept, msg.ID())
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	col.waitFor(t, kept, time.Minute)

	// Each message's deliver-at as the center stored it (ec-delay is
	// resolved against the PREPARE record's time).
	pool, err := pgxpool.New(t.Context(), e.cfg.Store.DSN)
	require.NoError(t, err)
	defer pool.Close()
	at := map[string]time.Time{}
	var last time.Time
	rows, err := pool.Query(t.Context(), `SELECT message_key, deliver_at FROM eventcenter_messages WHERE biz_id = 'orders'`)
	require.NoError(t, err)
	for rows.Next() {
		var key string
		var deliverAt time.Time
		require.NoError(t, rows.Scan(&key, &deliverAt))
		at["orders:"+key] = deliverAt
		if deliverAt.After(last) {
			last = deliverAt
		}
	}
	require.NoError(t, rows.Err())
	if len(at) != n {
		// CI once found 232 of the 1,000 rows although every kept message
		// had been forwarded: say what the table holds when it happens.
		var total, orders int
		var schema string
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE biz_id = 'orders'), current_schema()
			FROM eventcenter_messages`).Scan(&total, &orders, &schema))
		var missing []string
		for _, id := range append(slices.Clone(kept), cancel...) {
			if _, ok := at[id]; !ok && len(missing) < 10 {
				missing = append(missing, fmt.Sprintf("%s (forwarded %d times)", id, len(col.get(id))))
			}
		}
		t.Fatalf("%d of %d messages stored with a deliver-at; the table (schema %s) holds %d rows, %d of bizID orders; missing, for example: %v",
			len(at), n, schema, total, orders, missing)
	}
	time.Sleep(time.Until(last.Add(time.Second))) // a cancelled one would have come by now

	type arrival struct {
		id            string
		due, produced time.Time
	}
	var got []arrival
	var worst time.Duration
	for _, id := range kept {
		recs := col.get(id)
		require.Len(t, recs, 1, "%s forwarded once", id)
		a := arrival{id: id, due: at[id], produced: recs[0].At}
		// Record timestamps have millisecond precision.
		require.False(t, a.produced.Before(a.due.Truncate(time.Millisecond)), "%s sent %v before its deliver-at", id, a.due.Sub(a.produced))
		worst = max(worst, a.produced.Sub(a.due))
		got = append(got, a)
	}
	for _, id := range cancel {
		require.Empty(t, col.get(id), "cancelled %s was forwarded", id)
	}
	// In deliver-at order within the scan interval: a message due later
	// never goes out more than that before one due earlier.
	// Messages due at the same instant have no order between them: each
	// is compared with the latest sent of those due strictly earlier
	// (CI once saw two due in the same millisecond sent 205 ms apart).
	slices.SortFunc(got, func(a, b arrival) int { return a.due.Compare(b.due) })
	inversions := 0
	var latest, latestSoFar arrival
	for i, a := range got {
		if i > 0 && a.due.After(got[i-1].due) {
			latest = latestSoFar // every message due earlier has been seen
		}
		if a.produced.Before(latest.produced) {
			inversions++
			require.LessOrEqual(t, latest.produced.Sub(a.produced), scan,
				"%s (due %v) sent %v before %s (due %v)", a.id, a.due, latest.produced.Sub(a.produced), latest.id, latest.due)
		}
		if a.produced.After(latestSoFar.produced) {
			latestSoFar = a
		}
	}
	require.LessOrEqual(t, worst, 2*time.Second, "lateness on a loaded machine (scan interval %v)", scan)
	t.Logf("%d scheduled messages over %v arrived in deliver-at order within %v (%d sent a little before one due earlier), worst lateness %v; %d cancelled never did",
		len(kept), last.Sub(got[0].due).Round(time.Millisecond), scan, inversions, worst, len(cancel))
	proc.interrupt(t)
}
