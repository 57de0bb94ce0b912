package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store/postgres"
)

// The compatibility rule: a message in a state a newer center wrote
// (status 5, or send status 3, both unknown to this version) is never
// claimed, checked back, sent or changed by this center, whatever
// envelopes arrive for it, while the center handles everything else.
func TestUnknownStatusLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	e.startCenter(center.Options{}) // migrates the schema
	col := e.collect(businessTopic)
	pool, err := pgxpool.New(t.Context(), e.cfg.Store.DSN)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	// Due for a check-back and a send, with a body, as far as the columns go.
	_, err = pool.Exec(t.Context(), `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, topic, verify, verify_next_at, send_status, send_next_at, created_at, updated_at)
		VALUES ('future', 'status-5', 0, 5, true, 'p', $1, $2, now() - interval '1 hour', 0, now() - interval '1 hour', now(), now()),
		       ('future', 'send-3', 1, 2, true, 'p', $1, $2, now() - interval '1 hour', 3, now() - interval '1 hour', now(), now())`,
		businessTopic, srv.URL)
	require.NoError(t, err)
	snapshot := func() string {
		var s string
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT string_agg(to_jsonb(m)::text, E'\n' ORDER BY id)
			FROM eventcenter_messages m WHERE biz_id = 'future'`).Scan(&s))
		return s
	}
	before := snapshot()

	raw := e.raw()
	for _, key := range []string{"status-5", "send-3"} {
		for _, typ := range []envelope.Type{envelope.Commit, envelope.Rollback} {
			produceEnvelope(t, raw, envelope.Envelope{Type: typ, BizID: "future", MessageKey: key})
		}
		produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Prepare, BizID: "future", MessageKey: key,
			Payload: []byte("late"), ForwardTopic: businessTopic})
	}
	// Traffic after those envelopes on every partition: once it is all
	// forwarded, ingest has applied the envelopes before it.
	pl := produceMix(t, e, "after", 200, 4)
	col.waitFor(t, pl.committed, time.Minute)
	time.Sleep(2 * time.Second) // several send and check-back scans

	require.Equal(t, before, snapshot(), "a message in an unknown state was changed")
	require.Empty(t, col.get("future:status-5"))
	require.Empty(t, col.get("future:send-3"))
	require.Zero(t, calls.Load(), "checked back")
	checkForwarded(t, col, pl)
}

// /readyz names the cluster level: the lowest feature level of the live
// instances, here two centers of this release.
func TestReadyzShowsClusterLevel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	first := e.startCenter(center.Options{LevelInterval: 100 * time.Millisecond})
	second := e.startCenter(center.Options{LevelInterval: 100 * time.Millisecond})
	want := fmt.Sprintf("cluster level %d, this instance %d: lowest of 2 live instances", center.FeatureLevel, center.FeatureLevel)
	for _, c := range []*center.Center{first, second} {
		var body string
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + c.Addr() + "/readyz")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK && strings.Contains(body, want)
		}, time.Minute, 50*time.Millisecond, "readyz said %q", body)
		require.True(t, c.ClusterLevel().AtLeast(center.FeatureLevel))
	}
}

// Scheduled delivery is gated by the cluster level: while an instance of
// the release before it (level 2) reports, this center dead-letters a
// scheduled PREPARE with the reason and /readyz says so, unscheduled
// messages flow; once that instance is gone, scheduling is on again.
func TestSchedulingOffWhileAnOlderCenterIsLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	c := e.startCenter(center.Options{LevelInterval: 100 * time.Millisecond})
	col, dlq := e.collect(businessTopic), e.collect(controlTopic+".dlq")
	readyz := func() string {
		resp, err := http.Get("http://" + c.Addr() + "/readyz")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	require.Eventually(t, func() bool { return strings.Contains(readyz(), "scheduled delivery: on") }, time.Minute, 20*time.Millisecond)

	// An older center's heartbeat, kept alive until it leaves.
	pool, err := pgxpool.New(t.Context(), e.cfg.Store.DSN)
	require.NoError(t, err)
	defer pool.Close()
	old := postgres.Instance{ID: "old-release", Level: center.ScheduleLevel - 1, Version: "v-old", StartedAt: time.Now()}
	stop, beating := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		for {
			_ = postgres.ReportInstance(context.Background(), pool, old)
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond): // a heartbeat well within the 400 ms ttl
			}
		}
	}()
	require.Eventually(t, func() bool { on, _ := c.Scheduling(); return !on }, 30*time.Second, 20*time.Millisecond)
	require.Contains(t, readyz(), "scheduled delivery: off until the cluster level reaches 3")

	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	send := func(key string, delay time.Duration) {
		msg := clientlib.Message{BizID: "orders", Key: key, Payload: []byte(key), ForwardTopic: businessTopic, Delay: delay}
		require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
	}
	send("refused", time.Second)
	send("plain", 0)
	col.waitFor(t, []string{"orders:plain"}, time.Minute)
	require.Eventually(t, func() bool { _, n := dlq.count(); return n == 1 }, 30*time.Second, 20*time.Millisecond)
	d := dlq.get("")[0]
	require.Equal(t, "orders:refused", d.Key)
	require.Contains(t, d.Headers["ec-dlq-reason"], "scheduled delivery is off until every center runs a release of cluster level 3")
	require.Contains(t, d.Headers["ec-dlq-reason"], "old-release")

	close(stop)
	<-beating
	require.NoError(t, postgres.ForgetInstance(t.Context(), pool, old.ID))
	require.Eventually(t, func() bool { on, _ := c.Scheduling(); return on }, 30*time.Second, 20*time.Millisecond)
	send("accepted", 300*time.Millisecond)
	col.waitFor(t, []string{"orders:accepted"}, time.Minute)
	_, n := dlq.count()
	require.Equal(t, 1, n, "nothing more dead-lettered")
	require.Empty(t, col.get("orders:refused"))
}
