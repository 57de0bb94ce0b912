package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// A burst of retriable broker errors (answered by a kfake control function)
// does not leave the franz-go client unable to produce: concurrent sends over
// four partitions fail while the burst lasts and the first send after it
// delivers everything. So neither the idempotent producer's state after
// CORRUPT_MESSAGE nor the kfake control function keeps failing records.
func TestSendSucceedsRightAfterABurstOfBrokerErrors(t *testing.T) {
	t.Parallel()
	const burst = 10
	c := newCluster(t, kfake.SeedTopics(4, "orders"))
	tg := newTarget(t, c, nil)
	failed := kfaketest.FailProduce(t, c, "orders", kerr.CorruptMessage.Code, burst)

	round := func() (sent, errs int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				recs := records("orders", 20)
				for i := range recs {
					recs[i].Key = fmt.Sprintf("g%d-%d", g, i) // spread over the partitions
				}
				res := tg.Send(t.Context(), recs)
				mu.Lock()
				defer mu.Unlock()
				for _, r := range res {
					if r.Err != nil {
						require.Contains(t, r.Err.Error(), "CORRUPT_MESSAGE")
						require.False(t, forwarder.IsPermanent(r.Err))
						errs++
						continue
					}
					sent++
				}
			})
		}
		wg.Wait()
		return sent, errs
	}
	rounds := 0
	for failed() < burst {
		rounds++
		require.Less(t, rounds, 100, "the burst was never used up")
		round()
	}
	sent, errs := round()
	require.Equal(t, 80, sent, "the first round after the burst delivers everything")
	require.Zero(t, errs)
	require.Equal(t, burst, failed())
	t.Logf("%d injected errors used up in %d rounds; the next round delivered all", burst, rounds)
}

// The forwarder delivers everything soon after a burst of retriable broker
// errors ends, although the burst fails batches of every worker at once and
// each probe of an opened breaker uses up one or two of the injected errors.
// The clock advances 50ms every 5ms; the breaker's defaults apply.
func TestForwardRecoversSoonAfterABurstOfBrokerErrors(t *testing.T) {
	t.Parallel()
	const burst, n = 10, 120
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(4, "orders")}, func(c *forwarder.Config) {
		c.Lease = 3 * time.Second
		c.SendTimeout = 2 * time.Second
		c.Backoff = forwarder.Backoff{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond}
		c.MaxAttempts = 20
	})
	failed := kfaketest.FailProduce(t, p.c, "orders", kerr.CorruptMessage.Code, burst)

	var changes []store.Change
	at := p.clock.Now()
	for i := range n {
		key := fmt.Sprintf("order-%d", i)
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: at,
				Body: &state.Body{Payload: []byte(key), Topic: "orders", ForwardKey: "user-" + key}}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	res, err := p.st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: 3 * time.Second})
	require.NoError(t, err)
	require.Len(t, res.Sendable, n)
	p.f.Handoff(res.Sendable)

	const budget = 20 * time.Second // of the test clock
	unsent := func() int {
		left := 0
		for _, m := range res.Sendable {
			got, err := p.st.Get(t.Context(), m.BizID, m.Key)
			require.NoError(t, err)
			require.NotEqual(t, state.SendDead, got.SendStatus, "%s: %s", m.MessageID(), got.LastError)
			if got.SendStatus != state.SendSent {
				left++
			}
		}
		return left
	}
	// Real time for the sends; the test clock decides what is due.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var elapsed time.Duration
	for left := unsent(); left > 0; left = unsent() {
		require.Less(t, elapsed, budget, "%d of %d messages unsent %s after the burst began (%d errors injected)",
			left, n, elapsed, failed())
		<-tick.C
		p.clock.Advance(50 * time.Millisecond)
		elapsed += 50 * time.Millisecond
	}
	require.Equal(t, burst, failed(), "the injected errors were all hit")
	require.Len(t, consume(t, p.c, "orders", n), n)
	t.Logf("all %d messages sent %s (test clock) after a burst of %d broker errors", n, elapsed, burst)
}

// franz-go retries a partition whose produce got a retriable error (such as
// NOT_ENOUGH_REPLICAS) only after a metadata refresh, and refreshes at most
// every MetadataMinAge (5s by default): twenty such errors would hold the
// partition for over a minute. The target's shorter minimum age lets one
// send ride out a burst within its timeout.
func TestSendRetriesThroughABurstOfRetriableErrors(t *testing.T) {
	t.Parallel()
	const burst = 6
	c := newCluster(t, kfake.SeedTopics(1, "orders"))
	tg := newTarget(t, c, nil)
	failed := kfaketest.FailProduce(t, c, "orders", kerr.NotEnoughReplicas.Code, burst)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
	defer cancel()
	began := time.Now()
	res := tg.Send(ctx, records("orders", 3))
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	require.Equal(t, burst, failed())
	t.Logf("one send rode out %d NOT_ENOUGH_REPLICAS answers in %s", burst, time.Since(began))
}
