package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
)

// TestOrderKeyHoldsAcrossSendFailures runs per-key order through the
// center on each single-database store: the first messages of every key
// are committed while the business topic refuses every produce, so their
// sends fail and wait out a long backoff; the later ones are committed
// after the topic recovered, when an inline send would go at once. Read
// back from the topic, every key's first deliveries must follow its
// commit order (clientlib routes a key's envelopes through one control
// partition, so that is the producer's order). With per-key order off,
// the later messages overtake the ones in backoff.
func TestOrderKeyHoldsAcrossSendFailures(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, driver, func(c *config.Config) {
				c.Forward.SendTimeout = 300 * time.Millisecond
				c.Forward.InlineTimeout = 300 * time.Millisecond
				// A failed send comes back after seconds: long after
				// the messages committed once the topic recovered.
				c.Forward.BackoffBase = 3 * time.Second
				c.Forward.BackoffCap = 3 * time.Second
			})
			c := e.startCenter(center.Options{})
			require.Eventually(t, c.Ordering, 30*time.Second, 20*time.Millisecond, "per-key order switches on")
			got := readOrder(t, e)

			p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
			require.NoError(t, err)
			t.Cleanup(p.Close)
			const keys, before, after = 3, 4, 4
			want := map[string][]string{}
			send := func(i int) {
				for k := range keys {
					orderKey := fmt.Sprintf("entity-%d", k)
					msg := clientlib.Message{BizID: "orders", Key: fmt.Sprintf("%s-ev-%d", orderKey, i),
						Payload: []byte("x"), ForwardTopic: businessTopic, OrderKey: orderKey}
					require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
					want[orderKey] = append(want[orderKey], msg.ID())
				}
			}
			refuse := e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: businessTopic, Err: kerr.NotEnoughReplicas, Count: -1})
			for i := range before {
				send(i)
			}
			// Let the sends of the first messages fail before the topic
			// comes back.
			require.Eventually(t, func() bool { return refuse.Hits() >= keys }, 30*time.Second, 10*time.Millisecond)
			time.Sleep(600 * time.Millisecond) // two send timeouts: the failures are recorded
			refuse.Remove()
			for i := before; i < before+after; i++ {
				send(i)
			}
			delivered := func() {
				t.Helper()
				for orderKey, ids := range want {
					require.Eventually(t, func() bool { return len(got.firsts(orderKey)) == len(ids) }, time.Minute, 20*time.Millisecond,
						"every message of %s delivered", orderKey)
					require.Equal(t, ids, got.firsts(orderKey), "first deliveries of %s in commit order", orderKey)
				}
			}
			delivered()
			if driver != "postgres" {
				return
			}
			// On PostgreSQL, once the keys are free, their next messages
			// are written ahead: sent after the commit that sequenced
			// them, one write each, confirmed by the sent watermark.
			require.Eventually(t, c.WritingAhead, 30*time.Second, 20*time.Millisecond)
			send(before + after)
			delivered()
			pool, err := pgxpool.New(t.Context(), e.cfg.Store.DSN)
			require.NoError(t, err)
			defer pool.Close()
			var ahead int
			require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM eventcenter_messages
				WHERE sent_ahead_offset IS NOT NULL AND send_status = 1 AND message_key LIKE '%-ev-8'`).Scan(&ahead))
			require.Equal(t, keys, ahead, "the last round written ahead")
		})
	}
}

// orderLog is the business topic read back in log order: for every order
// key (the forward key the center defaults to), the ec-ids in the order of
// their first delivery.
type orderLog struct {
	mu    sync.Mutex
	seen  map[string]bool
	order map[string][]string
}

func (l *orderLog) firsts(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order[key]...)
}

func readOrder(t *testing.T, e *env) *orderLog {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(businessTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	l := &orderLog{seen: map[string]bool{}, order: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				var id string
				for _, h := range r.Headers {
					if h.Key == "ec-id" {
						id = string(h.Value)
					}
				}
				l.mu.Lock()
				if !l.seen[id] {
					l.seen[id] = true
					l.order[string(r.Key)] = append(l.order[string(r.Key)], id)
				}
				l.mu.Unlock()
			})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return l
}
