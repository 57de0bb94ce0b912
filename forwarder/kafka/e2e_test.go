package kafka_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

type clock = testclock.Clock

// pipeline is a forwarder with a Kafka target on kfake and the SQLite
// store, owning partition 0.
type pipeline struct {
	c     *kfake.Cluster
	clock *clock
	st    *sqlite.Store
	f     *forwarder.Forwarder
	seq   int
}

const lease = 30 * time.Second

func newPipeline(t *testing.T, clusterOpts []kfake.Opt, mod func(*forwarder.Config)) *pipeline {
	t.Helper()
	return newPipelineWith(t, clusterOpts, nil, mod)
}

// newPipelineWith is newPipeline whose target's configuration (creating
// missing topics) targetMod, when set, changes too.
func newPipelineWith(t *testing.T, clusterOpts []kfake.Opt, targetMod func(*kafka.Config), mod func(*forwarder.Config)) *pipeline {
	t.Helper()
	p := &pipeline{
		c:     newCluster(t, clusterOpts...),
		clock: testclock.At(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)),
	}
	tg := newTarget(t, p.c, func(cfg *kafka.Config) {
		cfg.AutoCreateTopics = true
		if targetMod != nil {
			targetMod(cfg)
		}
	})
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"), sqlite.Options{Now: p.clock.Now, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p.st = st
	owned := ingest.NewOwnership()
	owned.Assign(0)
	cfg := forwarder.Config{
		Targets:      map[string]forwarder.Target{"kafka": tg},
		ScanInterval: 10 * time.Millisecond,
		Lease:        lease,
		SendTimeout:  5 * time.Second,
		MarkInterval: 5 * time.Millisecond,
		Backoff:      forwarder.Backoff{Base: time.Second, Cap: 4 * time.Second, Rand: func() float64 { return 0.5 }},
		MaxAttempts:  3,
		Now:          p.clock.Now,
		Logger:       quiet,
	}
	if mod != nil {
		mod(&cfg)
	}
	f, err := forwarder.New(cfg, st, owned)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	// Registered after the store's Close: cleanups run last-in first-out.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, f.Stop(ctx))
	})
	p.f = f
	return p
}

// commit writes n committed messages for topic (as ingest does) and hands
// them to the forwarder.
func (p *pipeline) commit(t *testing.T, n int, topic string) []state.Message {
	t.Helper()
	var changes []store.Change
	for range n {
		p.seq++
		key := fmt.Sprintf("order-%d", p.seq)
		at := p.clock.Now()
		body := &state.Body{
			Payload: []byte("paid " + key), Topic: topic, ForwardKey: "user-7",
			Headers: []envelope.Header{{Key: "trace", Value: []byte("t1")}},
		}
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: at, Body: body}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	res, err := p.st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease})
	require.NoError(t, err)
	require.Len(t, res.Sendable, n)
	p.f.Handoff(res.Sendable)
	return res.Sendable
}

// wait waits for a message's send status, advancing the clock past any
// backoff while it waits.
func (p *pipeline) wait(t *testing.T, m state.Message, want state.SendStatus) state.Message {
	t.Helper()
	var got state.Message
	require.Eventually(t, func() bool {
		var err error
		got, err = p.st.Get(t.Context(), m.BizID, m.Key)
		require.NoError(t, err)
		if got.SendStatus == want {
			return true
		}
		p.clock.Advance(time.Second)
		return false
	}, 20*time.Second, 5*time.Millisecond, "%s never became %s: %+v", m.MessageID(), want, &got)
	return got
}

func TestForwardEndToEnd(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(3, "payments")}, nil)
	began := time.Now()
	msgs := p.commit(t, 200, "payments")
	recs := consume(t, p.c, "payments", 200)
	t.Logf("200 messages handed off and consumed from kfake in %s", time.Since(began))
	ids := map[string]bool{}
	for _, r := range recs {
		require.Equal(t, "user-7", string(r.Key))
		require.Len(t, r.Headers, 2)
		require.Equal(t, "trace", r.Headers[0].Key)
		require.Equal(t, "ec-id", r.Headers[1].Key)
		id := string(r.Headers[1].Value)
		require.Equal(t, "paid "+strings.TrimPrefix(id, "shop:"), string(r.Value))
		ids[id] = true
	}
	require.Len(t, ids, 200)
	for _, m := range msgs {
		got := p.wait(t, m, state.SendSent)
		require.Regexp(t, `^payments/[0-2]@\d+$`, got.SendRef)
	}
}

func TestForwardRetriesBrokerErrorsThenDelivers(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(1, "payments")}, nil)
	failed := kfaketest.FailProduce(t, p.c, "payments", kerr.CorruptMessage.Code, 2)
	msgs := p.commit(t, 1, "payments")
	got := p.wait(t, msgs[0], state.SendSent)
	require.Equal(t, 2, failed())
	require.Equal(t, 2, got.SendAttempts, "two refused sends were counted")
	require.Empty(t, got.LastError, "a sent message keeps no error of a failed try")
	require.Equal(t, "payments/0@0", got.SendRef)
	require.Len(t, consume(t, p.c, "payments", 1), 1)
}

func TestForwardPersistentBrokerErrorEndsDead(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(1, "payments")}, nil)
	kfaketest.FailProduce(t, p.c, "payments", kerr.CorruptMessage.Code, -1)
	msgs := p.commit(t, 1, "payments")
	got := p.wait(t, msgs[0], state.SendDead)
	require.Equal(t, 3, got.SendAttempts)
	require.Contains(t, got.LastError, `produce to kafka topic "payments"`)
	require.Contains(t, got.LastError, "CORRUPT_MESSAGE")
}

func TestForwardPermanentErrorsDeadAtOnceOthersFlow(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(1, "payments")}, nil)
	kfaketest.FailProduce(t, p.c, "payments", kerr.MessageTooLarge.Code, 1)
	big := p.commit(t, 1, "payments")
	got := p.wait(t, big[0], state.SendDead)
	require.Equal(t, 1, got.SendAttempts)
	require.Contains(t, got.LastError, `record for kafka topic "payments" is larger than the broker or client accepts`)
	ok := p.commit(t, 3, "payments")
	for _, m := range ok {
		p.wait(t, m, state.SendSent)
	}
}

func TestForwardAutoCreatesBusinessTopics(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.AllowAutoTopicCreation()}, nil)
	msgs := p.commit(t, 2, "new-business-topic")
	for _, m := range msgs {
		got := p.wait(t, m, state.SendSent)
		require.True(t, strings.HasPrefix(got.SendRef, "new-business-topic/"), got.SendRef)
	}
}

func TestForwardMissingTopicEndsDeadNamingIt(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, []kfake.Opt{kfake.SeedTopics(1, "payments")}, nil)
	missing := p.commit(t, 1, "no-such-topic")
	fine := p.commit(t, 1, "payments")
	got := p.wait(t, missing[0], state.SendDead)
	require.Equal(t, 1, got.SendAttempts)
	require.Contains(t, got.LastError, `kafka topic "no-such-topic" does not exist`)
	p.wait(t, fine[0], state.SendSent)
}
