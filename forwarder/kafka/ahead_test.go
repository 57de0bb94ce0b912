package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// A hot order key written ahead (PostgreSQL, store.ApplyRequest.WriteAhead)
// goes out after each ingest batch's commit in one pipelined send
// (store.ApplyRequest.AheadInOrder, SendInOrder). Broker errors injected
// in the middle of the first batch's pipeline fail the rest of it behind
// the first failure, unsent; the failed one is leased and the ones behind
// it, and the next batches', parked until it is sent; and the topic holds
// the key's messages in commit order: no record comes before the first
// delivery of every earlier-committed message, and none is lost. Skips
// without EVENTCENTER_TEST_POSTGRES.
func TestForwardHotKeyWrittenAheadKeepsOrderThroughBrokerErrors(t *testing.T) {
	t.Parallel()
	const batches, perBatch = 3, 80
	const n = batches * perBatch
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	clock := testclock.At(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	st, err := postgres.New(pool, postgres.Options{Now: clock.Now, Logger: quiet})
	require.NoError(t, err)

	c := newCluster(t, kfake.SeedTopics(1, "payments"))
	// Small producer batches: a batch's records go in several produce
	// requests, so an injected error lands in the middle of the pipeline.
	tg := newTarget(t, c, func(cfg *kafka.Config) { cfg.ClientOptions = []kgo.Opt{kgo.ProducerBatchMaxBytes(2 << 10)} })
	owned := ingest.NewOwnership()
	owned.Assign(0)
	reg := prometheus.NewRegistry()
	f, err := forwarder.New(forwarder.Config{
		Targets:      map[string]forwarder.Target{"kafka": tg},
		ScanInterval: 5 * time.Millisecond,
		Lease:        lease,
		SendTimeout:  5 * time.Second,
		MarkInterval: 2 * time.Millisecond,
		BatchSize:    64,
		Backoff:      forwarder.Backoff{Base: time.Second, Cap: 2 * time.Second, Rand: func() float64 { return 0.5 }},
		MaxAttempts:  3,
		Ordered:      func() bool { return true },
		WriteAhead:   func() bool { return true },
		Now:          clock.Now,
		Logger:       quiet,
		Registerer:   reg,
	}, st, owned)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, f.Stop(ctx))
	})
	ap := f.Applier(st)

	failed := kfaketest.FailProduceAfter(t, c, "payments", kerr.CorruptMessage.Code, 2, 2)
	offset := int64(0)
	ahead := 0
	for b := range batches {
		var changes []store.Change
		for i := b * perBatch; i < (b+1)*perBatch; i++ {
			key := fmt.Sprintf("o-%03d", i)
			body := &state.Body{Payload: []byte(key + "/" + strings.Repeat("x", 200)), Topic: "payments", ForwardKey: "shop-1", OrderKey: "shop-1"}
			changes = append(changes,
				store.Change{BizID: "shop", Key: key, Offset: offset, HasOffset: true,
					Event: state.Event{Kind: state.KindPrepare, At: clock.Now(), Body: body}},
				store.Change{BizID: "shop", Key: key, Offset: offset + 1, HasOffset: true,
					Event: state.Event{Kind: state.KindCommit, At: clock.Now()}})
			offset += 2
		}
		res, err := ap.Apply(t.Context(), store.ApplyRequest{Changes: changes})
		require.NoError(t, err)
		ahead += res.Ahead
		if b == 0 {
			require.Equal(t, 2, failed(), "the faults landed in the first batch's send")
			require.Positive(t, res.Ahead, "the records before the fault were sent ahead")
			require.Less(t, res.Ahead, perBatch, "the fault stopped the rest")
			require.Positive(t, counter(t, reg, "eventcenter_forward_order_behind_failed_total"),
				"the records behind the failure were failed unsent")
		}
	}
	require.Less(t, ahead, n)

	require.Eventually(t, func() bool {
		page, err := st.List(t.Context(), store.Filter{BizID: "shop", SendStatus: ptr(state.SendPending), Limit: 1})
		require.NoError(t, err)
		if len(page.Messages) == 0 {
			return true
		}
		clock.Advance(time.Second) // past the backoffs and parks
		return false
	}, 60*time.Second, 5*time.Millisecond, "every message sent")

	for i := range n {
		m, err := st.Get(t.Context(), "shop", fmt.Sprintf("o-%03d", i))
		require.NoError(t, err)
		require.Equal(t, state.SendSent, m.SendStatus, m.Key)
		require.LessOrEqual(t, m.SendAttempts, 1, "%s: no attempt spent behind a failure", m.Key)
	}
	// Commit order of first deliveries (duplicates allowed after), read
	// until every message was delivered.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "delivered in order up to o-%03d of %d", next, n)
		fs.EachRecord(func(r *kgo.Record) {
			var i int
			_, err := fmt.Sscanf(strings.SplitN(string(r.Value), "/", 2)[0], "o-%03d", &i)
			require.NoError(t, err)
			require.LessOrEqual(t, i, next, "o-%03d delivered before o-%03d", i, next)
			if i == next {
				next++
			}
		})
	}
}
