package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// plan says what happens to each message of a run.
type plan struct {
	committed []string // ids that must be forwarded
	rolled    []string // ids that must never be forwarded
}

var errLocalTx = errors.New("local transaction failed")

// produceMix sends n messages from several producer goroutines through
// clientlib: most committed with Transact, every 10th rolled back (its local
// transaction fails), every 10th+1 written COMMIT-before-PREPARE as raw
// records. Keys are prefix-i.
func produceMix(t *testing.T, e *env, prefix string, n, producers int) plan {
	t.Helper()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	var mu sync.Mutex
	var pl plan
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for w := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += producers {
				key := fmt.Sprintf("%s-%d", prefix, i)
				msg := clientlib.Message{
					BizID: "orders", Key: key, Payload: []byte("payload-" + key),
					ForwardTopic: businessTopic, ForwardKey: "fk-" + key,
					Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
				}
				var err error
				switch i % 10 {
				case 0:
					err = p.Transact(t.Context(), msg, func(context.Context) error { return errLocalTx })
					if errors.Is(err, errLocalTx) {
						err = nil
						mu.Lock()
						pl.rolled = append(pl.rolled, msg.ID())
						mu.Unlock()
						continue
					}
				case 1:
					err = commitBeforePrepare(t, e, msg)
				default:
					err = p.Transact(t.Context(), msg, func(context.Context) error { return nil })
				}
				if err != nil {
					errs <- fmt.Errorf("message %s: %w", key, err)
					return
				}
				mu.Lock()
				pl.committed = append(pl.committed, msg.ID())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return pl
}

// commitBeforePrepare writes the COMMIT record first, then the PREPARE.
func commitBeforePrepare(t *testing.T, e *env, msg clientlib.Message) error {
	raw := e.raw()
	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: msg.BizID, MessageKey: msg.Key})
	produceEnvelope(t, raw, envelope.Envelope{
		Type: envelope.Prepare, BizID: msg.BizID, MessageKey: msg.Key, Payload: msg.Payload,
		ForwardTopic: msg.ForwardTopic, ForwardKey: msg.ForwardKey, Headers: msg.Headers,
	})
	return nil
}

// checkForwarded asserts every committed message arrived with the right
// payload, key and headers, no rolled-back one did, and duplicates share
// their ec-id.
func checkForwarded(t *testing.T, col *collector, pl plan) {
	t.Helper()
	for _, id := range pl.committed {
		recs := col.get(id)
		require.NotEmpty(t, recs, "committed %s not forwarded", id)
		_, key, _ := envelope.SplitKey(id)
		for _, r := range recs {
			require.Equal(t, "payload-"+key, r.Value, id)
			require.Equal(t, "fk-"+key, r.Key, id)
			require.Equal(t, "t-"+key, r.Headers["trace"], id)
			require.Equal(t, id, r.Headers["ec-id"])
		}
	}
	for _, id := range pl.rolled {
		require.Empty(t, col.get(id), "rolled-back %s was forwarded", id)
	}
	ids, records := col.count()
	require.Equal(t, len(pl.committed), ids, "forwarded ids that were never committed")
	t.Logf("%d committed, %d rolled back, %d records forwarded (%d duplicates)", len(pl.committed), len(pl.rolled), records, records-ids)
}

func TestFlowSQLite(t *testing.T) {
	t.Parallel()
	testFlow(t, "sqlite")
}

func TestFlowPostgres(t *testing.T) {
	t.Parallel()
	testFlow(t, "postgres")
}

func testFlow(t *testing.T, driver string) {
	e := newEnv(t, driver)
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	pl := produceMix(t, e, "m", 10000, 8)
	col.waitFor(t, pl.committed, 2*time.Minute)
	// Rolled-back messages are decided in the store before we look.
	for _, id := range pl.rolled[:10] {
		biz, key, _ := envelope.SplitKey(id)
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), biz, key)
			return err == nil && m.Status == state.RolledBack
		}, 30*time.Second, 20*time.Millisecond)
	}
	checkForwarded(t, col, pl)
}

// TestRestartMidStream stops the center while messages are flowing and
// starts another on the same store and group: nothing is lost.
func TestRestartMidStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	col := e.collect(businessTopic)
	first := e.startCenter(center.Options{})
	var pl plan
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		pl = produceMix(t, e, "restart", 3000, 4)
	}()
	require.Eventually(t, func() bool { ids, _ := col.count(); return ids >= 300 }, time.Minute, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, first.Stop(ctx))
	ids, _ := col.count()
	t.Logf("stopped the first center after %d messages were forwarded", ids)
	e.startCenter(center.Options{})
	<-produced
	col.waitFor(t, pl.committed, 2*time.Minute)
	checkForwarded(t, col, pl)
}
