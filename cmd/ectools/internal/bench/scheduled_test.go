package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// The seeding writes what ingest writes for a clientlib Transact of the
// same message: the stored rows are equal but for the key, the clock
// times of the write and the id.
func TestSeedWritesWhatIngestWrites(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	cfg := Default()
	cfg.Partitions, cfg.Payload, cfg.Scheduled = 3, 16, 5
	// The center checks a PREPARE back when it falls due, and a claim
	// moves its check-back time: the Transact's COMMIT must arrive
	// before then, however loaded the machine.
	cfg.FirstDelay = time.Minute
	cfg.tempDir = t.TempDir()
	require.NoError(t, createTopics(t.Context(), brokers, cfg.Partitions, time.Minute, cfg.ControlTopic, cfg.ControlTopic+".dlq"))
	ctr, stop, err := startCenter(t.Context(), cfg, "seedtest", brokers, []string{"http://127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, stop()) })

	const topic, verify = "sched.topic", "http://127.0.0.1:1/check"
	plan := newSchedPlan(cfg, time.Now())
	_, err = seedScheduled(t.Context(), cfg, ctr, plan, "seed", topic, verify)
	require.NoError(t, err)

	p, err := clientlib.NewProducer(clientlib.WithBrokers(brokers...), clientlib.WithControlTopic(cfg.ControlTopic), clientlib.WithDefaultVerify(verify))
	require.NoError(t, err)
	defer p.Close()
	for i := range plan.n {
		at := plan.at(i)
		key := "kafka-sched-" + strconv.Itoa(i)
		msg := clientlib.Message{BizID: bizID, Key: key, Payload: make([]byte, cfg.Payload), ForwardTopic: topic, ForwardKey: key,
			DeliverAt: at, Headers: []clientlib.Header{
				{Key: schedSeqHeader, Value: []byte(strconv.Itoa(i))},
				{Key: schedAtHeader, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))},
			}}
		require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
	}
	get := func(key string) state.Message {
		t.Helper()
		var m state.Message
		require.Eventually(t, func() bool {
			var err error
			m, err = ctr.Store.Get(t.Context(), bizID, key)
			return err == nil && m.Status == state.Committed && m.HasBody
		}, 30*time.Second, 10*time.Millisecond, key)
		return m
	}
	for i := range plan.n {
		seeded, via := get("seed-sched-"+strconv.Itoa(i)), get("kafka-sched-"+strconv.Itoa(i))
		require.Equal(t, envelope.PartitionFor(envelope.Key(bizID, seeded.Key), cfg.Partitions), seeded.Partition)
		require.Equal(t, envelope.PartitionFor(envelope.Key(bizID, via.Key), cfg.Partitions), via.Partition, "the producer's partition")
		require.True(t, seeded.DeliverAt.Equal(plan.at(i)))
		require.True(t, seeded.SendNextAt.Equal(seeded.DeliverAt), "first due at its deliver-at")
		require.True(t, via.SendNextAt.Equal(via.DeliverAt))
		require.InDelta(t, via.VerifyNextAt.Sub(via.CreatedAt), seeded.VerifyNextAt.Sub(seeded.CreatedAt), float64(time.Millisecond), "the same check-back time")
		for _, m := range []*state.Message{&seeded, &via} {
			m.ID, m.Key, m.ForwardKey, m.Partition = 0, "", "", 0
			m.CreatedAt, m.UpdatedAt, m.DecidedAt, m.VerifyNextAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			m.SendNextAt, m.DeliverAt = m.SendNextAt.UTC(), m.DeliverAt.UTC()
		}
		require.Equal(t, via, seeded)
	}
	cs, err := ctr.Store.Counts(t.Context())
	require.NoError(t, err)
	var scheduled int64
	for _, c := range cs {
		scheduled += c.Scheduled
	}
	require.EqualValues(t, 2*plan.n, scheduled, "all SCHEDULED")
	claimed, err := ctr.Store.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0, 1, 2}, Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, claimed, "none due")
}

// Scheduled messages through a run on PostgreSQL: held ones are not sent
// while the load flows; falling due, each is read once, none early, with
// its lateness measured.
func TestRunPostgresScheduled(t *testing.T) {
	t.Parallel()
	dsn := pgtest.BaseDSN(t)
	held := Default()
	held.Store, held.DSN, held.Baselines = "postgres", dsn, false
	held.Messages, held.Concurrency, held.Partitions = 300, 8, 2
	held.Scheduled = 3000
	rep, err := Run(t.Context(), held)
	require.NoError(t, err)
	require.EqualValues(t, 300, rep.Center.Forwarded)
	s := rep.Scheduled
	require.NotNil(t, s)
	require.Equal(t, 3000, s.Messages)
	require.Zero(t, s.Forwarded, "held: none sent")
	require.Contains(t, s.Seeded, "VACUUM (ANALYZE) after seeding, then CHECKPOINT")
	require.EqualValues(t, 3300, rep.RowVersions.Messages)
	var table strings.Builder
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "scheduled: forwarded during the run  0")

	due := held
	due.Messages, due.Scheduled, due.ScheduledDueRate, due.ScheduledLead = 0, 2000, 1000, 4*time.Second
	due.ScanInterval = 100 * time.Millisecond
	rep, err = Run(t.Context(), due)
	require.NoError(t, err)
	s = rep.Scheduled
	require.EqualValues(t, 2000, s.Forwarded)
	require.Zero(t, s.Missing)
	require.Zero(t, s.Duplicates)
	require.Zero(t, s.Early)
	require.EqualValues(t, 2000, s.Lateness.Count)
	require.InDelta(t, 2, s.DueSeconds, 0.01)
	require.Positive(t, s.FirstDueSeconds)
	require.Positive(t, s.SendRate)
	var perSec int64
	for _, n := range s.ProducedPerSecond {
		perSec += n
	}
	require.EqualValues(t, 2000, perSec, "every one counted in its second")
	require.Equal(t, "100ms", rep.Config.ScanInterval)
	table.Reset()
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "delivery lateness (produce − deliver-at)")
}
