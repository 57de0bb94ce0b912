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
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// stampTarget acknowledges every record at once and notes when each
// bizID's records were sent.
type stampTarget struct {
	mu   sync.Mutex
	at   map[string]time.Time // record id → sent
	sent map[string]int       // bizID → records
}

func (s *stampTarget) Send(_ context.Context, recs []forwarder.Record) []forwarder.Result {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.at[r.ID] = now
		biz, _, _ := strings.Cut(r.ID, ":")
		s.sent[biz]++
	}
	return make([]forwarder.Result, len(recs))
}

func (s *stampTarget) Close() error { return nil }

// BenchmarkNoisyNeighbourBacklog: bizID "flood" has a backlog of 200,000
// due messages in PostgreSQL (a target outage just ended, or a flood held
// by its limit); bizID "quiet" makes a message due every 5 ms (200/s:
// retries, scheduled messages, released handoffs, messages after a
// restart: what the claims serve) while the forwarder drains the
// backlog. It reports quiet's due-to-sent p50 and p99 and flood's drain
// rate, with oldest-first claims and with fair claims (docs/fairness.md).
//
//	EVENTCENTER_TEST_POSTGRES=... go test ./forwarder -run '^$' -bench NoisyNeighbourBacklog -benchtime 1x -count 3
func BenchmarkNoisyNeighbourBacklog(b *testing.B) {
	backlog := 200_000
	if os.Getenv("BACKLOG") != "" {
		backlog, _ = strconv.Atoi(os.Getenv("BACKLOG"))
	}
	for _, fair := range []bool{false, true} {
		b.Run(map[bool]string{false: "oldest-first", true: "fair"}[fair], func(b *testing.B) {
			for range b.N {
				noisyBacklog(b, backlog, fair)
			}
		})
	}
}

func noisyBacklog(b *testing.B, backlog int, fair bool) {
	b.StopTimer()
	ctx := b.Context()
	pool := pgtest.Pool(b)
	require.NoError(b, postgres.Migrate(ctx, pool))
	st, err := postgres.New(pool, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, decided_at, created_at, updated_at)
		SELECT 'flood', 'k' || g, g % 8, 2, true, convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '', 0,
			now() - interval '10 minutes' + g * interval '1 microsecond', now(), now(), now()
		FROM generate_series(1, $1) g`, backlog)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(b, err)

	target := &stampTarget{at: map[string]time.Time{}, sent: map[string]int{}}
	owned := ingest.NewOwnership()
	owned.Assign(0, 1, 2, 3, 4, 5, 6, 7)
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"t": target}, OldestFirst: !fair,
		Logger: slog.New(slog.DiscardHandler),
	}, claimLog{st, b}, owned)
	require.NoError(b, err)

	// quiet's messages: due at once, for the claims.
	due := map[string]time.Time{}
	var quietN int
	stop := make(chan struct{})
	done := make(chan struct{})
	b.StartTimer()
	began := time.Now()
	require.NoError(b, f.Start(ctx))
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
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
			due["quiet:"+key] = at
			quietN = i + 1
		}
	}()
	for {
		target.mu.Lock()
		n := target.sent["flood"]
		target.mu.Unlock()
		if n >= backlog {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the target's count
	}
	drained := time.Since(began)
	close(stop)
	<-done
	// The last quiet messages go too.
	require.Eventually(b, func() bool {
		target.mu.Lock()
		defer target.mu.Unlock()
		return target.sent["quiet"] >= quietN
	}, time.Minute, 10*time.Millisecond)
	b.StopTimer()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(b, f.Stop(sctx))

	// quiet's messages due while the backlog drained (the later ones wait
	// for the scan interval: there is no backlog left to claim).
	var lat []time.Duration
	target.mu.Lock()
	for id, at := range due {
		if at.Before(began.Add(drained)) {
			lat = append(lat, target.at[id].Sub(at))
		}
	}
	target.mu.Unlock()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(.5), "quiet-p50-ms")
	b.ReportMetric(q(.99), "quiet-p99-ms")
	b.ReportMetric(float64(backlog)/drained.Seconds(), "flood-msg/s")
	b.ReportMetric(float64(len(lat)), "quiet-msgs")
}

type claimLog struct {
	*postgres.Store
	b *testing.B
}

func (c claimLog) ClaimSends(ctx context.Context, cl store.Claim) ([]state.Message, error) {
	t := time.Now()
	ms, err := c.Store.ClaimSends(ctx, cl)
	if os.Getenv("CLAIMLOG") != "" {
		fmt.Fprintf(os.Stderr, "claim limit %d got %d in %s err %v\n", cl.Limit, len(ms), time.Since(t), err)
	}
	return ms, err
}
