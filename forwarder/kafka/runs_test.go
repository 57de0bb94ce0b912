package kafka_test

import (
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
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// A hot order key (every message one order key and one forward key) goes
// in runs (store.Claim.Run) through SendInOrder; broker errors injected in
// the middle of a run fail the rest of it behind the first failure, and
// the topic still holds the key's messages in commit order: no record
// comes before the first delivery of every earlier-committed message. No
// message ends DEAD for being behind a failure.
func TestForwardHotKeyRunsKeepOrderThroughBrokerErrors(t *testing.T) {
	t.Parallel()
	const n = 240
	reg := prometheus.NewRegistry()
	p := newPipelineWith(t, []kfake.Opt{kfake.SeedTopics(1, "payments")}, func(cfg *kafka.Config) {
		// Small producer batches: a run of records goes in several produce
		// requests, so an injected error lands in the middle of one.
		cfg.ClientOptions = []kgo.Opt{kgo.ProducerBatchMaxBytes(2 << 10)}
		cfg.AutoCreateTopics = false
	}, func(cfg *forwarder.Config) {
		cfg.ScanInterval, cfg.MarkInterval = 5*time.Millisecond, 2*time.Millisecond
		cfg.BatchSize = 64
		cfg.Backoff.Cap = 2 * time.Second
		cfg.Ordered = func() bool { return true }
		cfg.Registerer = reg
	})
	c, clock, st, f := p.c, p.clock, p.st, p.f

	// Two faults, each in the middle of a run: the broker takes some
	// requests, refuses the next ones, then takes the rest.
	failed := kfaketest.FailProduceAfter(t, c, "payments", kerr.CorruptMessage.Code, 2, 2)
	var changes []store.Change
	for i := range n {
		key := fmt.Sprintf("o-%03d", i)
		body := &state.Body{Payload: []byte(key + "/" + strings.Repeat("x", 200)), Topic: "payments", ForwardKey: "shop-1", OrderKey: "shop-1"}
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: clock.Now(), Body: body}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: clock.Now()}})
	}
	res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease, Ordered: true})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 1, "the head alone; the rest parked behind it")
	f.Handoff(res.Sendable)

	require.Eventually(t, func() bool {
		page, err := st.List(t.Context(), store.Filter{BizID: "shop", SendStatus: ptr(state.SendPending), Limit: 1})
		require.NoError(t, err)
		if len(page.Messages) == 0 {
			return true
		}
		clock.Advance(time.Second) // past the backoffs
		return false
	}, 30*time.Second, 5*time.Millisecond, "every message sent")
	require.Equal(t, 2, failed())

	for i := range n {
		m, err := st.Get(t.Context(), "shop", fmt.Sprintf("o-%03d", i))
		require.NoError(t, err)
		require.Equal(t, state.SendSent, m.SendStatus, m.Key)
	}
	recs := consume(t, c, "payments", n)
	// Commit order of first deliveries (duplicates allowed after).
	next := 0
	for _, r := range recs {
		key := strings.SplitN(string(r.Value), "/", 2)[0]
		var i int
		_, err := fmt.Sscanf(key, "o-%03d", &i)
		require.NoError(t, err)
		require.LessOrEqual(t, i, next, "%s delivered before o-%03d", key, next)
		if i == next {
			next++
		}
	}
	require.Equal(t, n, next, "every message delivered")
	require.Positive(t, counter(t, reg, "eventcenter_forward_order_behind_failed_total"),
		"a fault landed in the middle of a run and failed what was behind it")
}

func ptr[T any](v T) *T { return &v }

// counter reads a counter without labels from reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
