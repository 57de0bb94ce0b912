package main

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
	"github.com/eventcenter/eventcenter/examples/internal/inboxtest"
	"github.com/eventcenter/eventcenter/forwarder"
	rmqforwarder "github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

const topic = "orders"

// forwardAll sends n messages as the center's RocketMQ target builds them
// (ec-id property, keys, sharding key), about one in five twice (the center
// forwards at least once). It returns the amount of each id and how many
// messages were sent.
func forwardAll(t *testing.T, s *rocketmqfake.Server, n int, rng *rand.Rand) (map[string]int64, int) {
	t.Helper()
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{s.NameServerAddr()}),
		producer.WithInstanceName(rmqtest.InstanceName("inboxrocketmq-producer")),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { require.NoError(t, p.Shutdown()) }()
	want := map[string]int64{}
	var msgs []*primitive.Message
	for i := range n {
		key := "o-" + strconv.Itoa(i)
		amount := int64(1 + rng.IntN(1000))
		rec := forwarder.BuildRecord(&state.Message{BizID: "order", Key: key, Topic: topic, ForwardKey: key, Payload: []byte(strconv.FormatInt(amount, 10))})
		m, err := rmqforwarder.Message(&rec)
		require.NoError(t, err)
		want[rec.ID] = amount
		msgs = append(msgs, m)
		if rng.IntN(5) == 0 {
			dup, err := rmqforwarder.Message(&rec)
			require.NoError(t, err)
			msgs = append(msgs, dup)
		}
	}
	for _, m := range msgs {
		_, err := p.SendSync(t.Context(), m)
		require.NoError(t, err)
	}
	return want, len(msgs)
}

// consume runs a push consumer in rocketmq group rmqGroup with h until
// handled reports every one of total messages (duplicates included) was
// through, then shuts it down.
// It calls count for each handled message.
func consume(t *testing.T, s *rocketmqfake.Server, rmqGroup string, h *Handler, total int, count func(applied bool)) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{} // by broker message id: each sent message once
	all := make(chan struct{})
	h.Handled = func(m *primitive.MessageExt, applied bool) {
		count(applied)
		mu.Lock()
		defer mu.Unlock()
		seen[m.MsgId] = true
		if len(seen) == total {
			close(all)
		}
	}
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{s.NameServerAddr()}),
		consumer.WithGroupName(rmqGroup),
		consumer.WithInstance(rmqtest.InstanceName("inboxrocketmq")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, h.Consume))
	require.NoError(t, c.Start())
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("consumer %s handled %d of %d messages", rmqGroup, n, total)
	}
	require.NoError(t, c.Shutdown())
}

// flaky fails the first transaction of about one message in four, half
// of the time after the consumer's write (which the rollback must undo).
type flaky struct {
	mu    sync.Mutex
	rng   *rand.Rand
	tried map[string]bool
	fails int
}

var errInjected = errors.New("injected failure")

func (f *flaky) fail(id string) (fail, afterWrite bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tried[id] {
		return false, false
	}
	f.tried[id] = true
	if f.rng.IntN(4) != 0 {
		return false, false
	}
	f.fails++
	return true, f.rng.IntN(2) == 0
}

// Forwarded messages, some sent twice, consumed by a push consumer whose
// transactions fail now and then; then the whole topic delivered again
// (a consumer group whose offsets are lost): every effect is applied once.
func TestExactlyOnceRocketMQ(t *testing.T) {
	t.Parallel()
	for i, d := range inboxtest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			rmqtest.Quiet()
			s, err := rocketmqfake.Start(rocketmqfake.WithTopic(topic, 4))
			require.NoError(t, err)
			t.Cleanup(s.Close)
			rng := rand.New(rand.NewPCG(uint64(i+1), 7))
			db := inboxtest.DB(t, d)
			_, err = db.ExecContext(t.Context(), inboxtest.LedgerSchema(d))
			require.NoError(t, err)
			want, total := forwardAll(t, s, 300, rng)

			in, err := inbox.New(d, "billing")
			require.NoError(t, err)
			f := &flaky{rng: rand.New(rand.NewPCG(uint64(i+1), 8)), tried: map[string]bool{}}
			var mu sync.Mutex
			applied, skipped := 0, 0
			newHandler := func() *Handler {
				return &Handler{DB: db, Inbox: in, Apply: func(ctx context.Context, tx *sql.Tx, m *primitive.MessageExt) error {
					id := m.GetProperty(inbox.HeaderID)
					fail, afterWrite := f.fail(id)
					if fail && !afterWrite {
						return errInjected
					}
					amount, err := strconv.ParseInt(string(m.Body), 10, 64)
					if err != nil {
						return err
					}
					if err := inboxtest.Apply(ctx, tx, d, id, amount); err != nil {
						return err
					}
					if fail {
						return errInjected
					}
					return nil
				}}
			}
			count := func(a bool) {
				mu.Lock()
				defer mu.Unlock()
				if a {
					applied++
				} else {
					skipped++
				}
			}
			consume(t, s, "billing", newHandler(), total, count)
			// All offsets lost: another rocketmq group, the same inbox group.
			consume(t, s, "billing-replay", newHandler(), total, count)

			mu.Lock()
			t.Logf("%s: %d messages sent, %d applied, %d skipped, %d transactions failed by injection", d, total, applied, skipped, f.fails)
			require.Equal(t, len(want), applied)
			require.Equal(t, 2*total-len(want), skipped)
			mu.Unlock()
			require.Positive(t, f.fails)
			ids, apps, twice := inboxtest.Ledger(t.Context(), t, db)
			require.Empty(t, twice)
			require.Equal(t, int64(len(want)), ids)
			require.Equal(t, int64(len(want)), apps)
			var sum, wantSum int64
			require.NoError(t, db.QueryRowContext(t.Context(), "SELECT SUM(amount) FROM ledger").Scan(&sum))
			for _, a := range want {
				wantSum += a
			}
			require.Equal(t, wantSum, sum)
		})
	}
}
