package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/verifier"
)

func TestRunEmbeddedSQLite(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Messages = 300
	cfg.Producers = 2
	cfg.Concurrency = 8
	cfg.RollbackRatio = 0.1
	cfg.CheckbackRatio = 0.1
	cfg.Partitions = 2
	cfg.DrainTimeout = time.Minute
	var progress bytes.Buffer
	cfg.Progress = &progress
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)

	c := rep.Center
	require.Zero(t, c.Errors, c.FirstError)
	require.EqualValues(t, 300, c.Sent)
	require.InDelta(t, 30, c.RolledBack, 2)
	require.InDelta(t, 30, c.LeftForCheckback, 2)
	require.Equal(t, c.Sent, c.Committed+c.RolledBack+c.LeftForCheckback)
	require.Equal(t, c.Committed+c.LeftForCheckback, c.Forwarded)
	require.Zero(t, c.Missing)
	require.Zero(t, c.Duplicates)
	require.EqualValues(t, c.Committed, c.CommitToForward.Count)
	require.EqualValues(t, c.Committed, c.CommitToSend.Count, "every forwarded record carries the center's produce time")
	require.LessOrEqual(t, c.CommitToSend.MaxMs, c.CommitToForward.MaxMs, "the center's share is part of the whole")
	require.EqualValues(t, c.LeftForCheckback, c.Checkback.Count)
	require.GreaterOrEqual(t, c.CheckbackCalls, c.LeftForCheckback)
	require.Positive(t, c.FirstCheckbackSeconds)
	require.GreaterOrEqual(t, c.CheckbackCallRate, c.CheckbackRate, "from the first call: no longer than from the first send")
	require.Positive(t, c.ForwardRate)
	require.Positive(t, c.HeapStartMB)
	require.NotNil(t, rep.Transport)
	require.NotNil(t, rep.Store)
	require.Equal(t, 1000, rep.Store.Messages) // one batch
	require.Positive(t, rep.Ratio)
	require.Contains(t, progress.String(), "baseline: store")

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "commit → forward")
	require.Contains(t, table.String(), "commit → center's produce")
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Equal(t, c.Forwarded, back.Center.Forwarded)
	// Per-second counts cover every message; CPU comes from /proc.
	var fwd, sent int64
	for _, n := range back.Center.ForwardedPerSecond {
		fwd += n
	}
	for _, n := range back.Center.SentPerSecond {
		sent += n
	}
	require.Equal(t, c.Forwarded, fwd)
	require.Equal(t, c.Committed+c.LeftForCheckback, sent)
	require.NotNil(t, back.CPU)
	require.Positive(t, back.CPU.ProcessSeconds)
	require.Positive(t, back.CPU.ProcessUsPerMsg)
	require.Contains(t, table.String(), "CPU per forwarded message")
	// The check-back baseline ran against the same server, and its calls
	// are not counted as the center's.
	require.NotNil(t, back.CheckbackBaseline)
	require.Equal(t, 5000, back.CheckbackBaseline.Messages)
	require.Positive(t, back.CheckbackRatio)
	require.Less(t, c.CheckbackCalls, int64(5000), "the baseline's calls are not the center's")
	require.Contains(t, table.String(), "baseline: check-back")
}

func TestRunPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.BaseDSN(t)
	cfg := Default()
	cfg.Store, cfg.DSN = "postgres", dsn
	cfg.Messages = 200
	cfg.Concurrency = 8
	cfg.CheckbackRatio = 0.2
	cfg.Partitions = 2
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Center.Errors, rep.Center.FirstError)
	require.EqualValues(t, 200, rep.Center.Forwarded)
	require.Zero(t, rep.Center.Missing)
	require.NotEmpty(t, rep.Machine.Postgres)
	require.NotNil(t, rep.Store)
	require.NotNil(t, rep.CPU)
	// The server runs here, so its processes are sampled; their CPU over a
	// 200-message run can round to zero ticks (10 ms), so only presence
	// is asserted.
	require.Positive(t, rep.CPU.PostgresProcesses, "the server's processes are read from /proc when it runs here")
	// Every message is inserted once at least; none is written more than
	// a handful of times.
	rv := rep.RowVersions
	require.NotNil(t, rv)
	require.EqualValues(t, 200, rv.Messages)
	require.GreaterOrEqual(t, rv.Inserts, int64(200))
	require.GreaterOrEqual(t, rv.PerMessage, 1.0)
	require.Less(t, rv.PerMessage, 6.0)
	require.InDelta(t, rv.PerMessage, rv.InsertsPerMessage+rv.UpdatesPerMessage, 1e-9)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit  func(*Config)
		field string
	}{
		"no count":    {func(c *Config) { c.Messages = 0 }, "messages"},
		"ratios":      {func(c *Config) { c.RollbackRatio, c.CheckbackRatio = .6, .6 }, "rollback-ratio"},
		"store":       {func(c *Config) { c.Store = "oracle" }, "store"},
		"mysql dsn":   {func(c *Config) { c.Store, c.DSN = "mysql", "u:p@tcp(h:3306)/" }, "dsn"},
		"pg dsn":      {func(c *Config) { c.Store = "postgres" }, "dsn"},
		"shard dsns":  {func(c *Config) { c.Store, c.DSN = "sharded", "postgres://a/x,mysql://b/y" }, "dsn"},
		"external":    {func(c *Config) { c.External = true }, "brokers"},
		"producers":   {func(c *Config) { c.Producers = 0 }, "producers"},
		"rate":        {func(c *Config) { c.Rate = -1 }, "rate"},
		"drain":       {func(c *Config) { c.DrainTimeout = 0 }, "drain-timeout"},
		"partitions":  {func(c *Config) { c.Partitions = 0 }, "partitions"},
		"concurrency": {func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		"order keys":  {func(c *Config) { c.OrderKeys = -1 }, "order-keys"},
		"hot and n":   {func(c *Config) { c.OrderKeys, c.HotKey = 3, true }, "hot-key"},
		"scheduled":   {func(c *Config) { c.Scheduled = -1 }, "scheduled"},
		"sched ext":   {func(c *Config) { c.Scheduled, c.External, c.Brokers = 5, true, []string{"b:9092"} }, "scheduled"},
		"sched http":  {func(c *Config) { c.Scheduled, c.Via = 5, ViaHTTP }, "scheduled"},
		"due rate":    {func(c *Config) { c.Scheduled, c.ScheduledDueRate = 5, -1 }, "scheduled-due-rate"},
		"lead":        {func(c *Config) { c.ScheduledLead = -time.Second }, "scheduled-lead"},
		"scan":        {func(c *Config) { c.ScanInterval = -time.Second }, "scan-interval"},
		"held alone":  {func(c *Config) { c.Messages, c.Scheduled = 0, 5 }, "messages"},
		"target":      {func(c *Config) { c.Target = "pulsar" }, "target"},
		"rmq ext":     {func(c *Config) { c.Target, c.External, c.Brokers = TargetRocketMQ, true, []string{"b:9092"} }, "target"},
		"rmq http":    {func(c *Config) { c.Target, c.Via = TargetRocketMQ, ViaHTTP }, "target"},
		"rmq sched":   {func(c *Config) { c.Target, c.Scheduled = TargetRocketMQ, 5 }, "target"},
		"rmq noisy":   {func(c *Config) { c.Target, c.Noisy.FloodMessages = TargetRocketMQ, 1000 }, "target"},
		"rmq topic":   {func(c *Config) { c.Target, c.Topic = TargetRocketMQ, "bench.x" }, "topic"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := Default()
			tc.edit(&cfg)
			err := cfg.Validate()
			require.ErrorContains(t, err, tc.field+":")
			_, err = Run(t.Context(), cfg)
			require.Error(t, err)
		})
	}
	cfg := Default()
	require.NoError(t, cfg.Validate())
	cfg.Messages, cfg.Scheduled, cfg.ScheduledDueRate = 0, 5, 10
	require.NoError(t, cfg.Validate(), "only scheduled messages, falling due")
	cfg = Default()
	cfg.Target, cfg.HotKey, cfg.Topic = TargetRocketMQ, true, "bench_x"
	require.NoError(t, cfg.Validate(), "a hot key to RocketMQ")
}

// With order keys, every message carries one (round robin), and all are
// forwarded in key order by the PostgreSQL store (the level gate opens).
func TestRunPostgresOrderKeys(t *testing.T) {
	t.Parallel()
	dsn := pgtest.BaseDSN(t)
	cfg := Default()
	cfg.Store, cfg.DSN = "postgres", dsn
	cfg.Messages, cfg.Concurrency, cfg.Partitions = 300, 8, 2
	cfg.OrderKeys = 7
	cfg.Baselines = false
	require.Equal(t, "ok-3", cfg.orderKey(10))
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Center.Errors, rep.Center.FirstError)
	require.EqualValues(t, 300, rep.Center.Forwarded)
	require.Equal(t, 7, rep.Config.OrderKeys)
	ahead := 0.0
	for _, m := range rep.Metrics {
		if m.Name == "eventcenter_forward_order_ahead_total{result=confirmed}" {
			ahead = m.Value
		}
	}
	require.Positive(t, ahead, "the run starts once ordered messages are written ahead; none was")
	var table strings.Builder
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "7 distinct")
	hot := Config{HotKey: true}
	require.Equal(t, "hot", hot.orderKey(5))
	require.Empty(t, (&Config{}).orderKey(5))
}

// A message with an order key is forwarded with its order key by default
// (a key's run on one partition, pipelined), with its own key under
// --forward-key message; one without an order key always with its own.
func TestForwardKey(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		set            func(*Config)
		order, forward string
	}{
		"none":          {func(*Config) {}, "", "m-10"},
		"none, message": {func(c *Config) { c.ForwardKey = ForwardKeyMessage }, "", "m-10"},
		"hot":           {func(c *Config) { c.HotKey = true }, "hot", "hot"},
		"hot, message":  {func(c *Config) { c.HotKey, c.ForwardKey = true, ForwardKeyMessage }, "hot", "m-10"},
		"order keys":    {func(c *Config) { c.OrderKeys = 7 }, "ok-3", "ok-3"},
		"keys, message": {func(c *Config) { c.OrderKeys, c.ForwardKey = 7, ForwardKeyMessage }, "ok-3", "m-10"},
	}
	for name, tc := range cases {
		cfg := Default()
		tc.set(&cfg)
		require.NoError(t, cfg.Validate(), name)
		order, forward := cfg.keys(10, "m-10")
		require.Equal(t, tc.order, order, name)
		require.Equal(t, tc.forward, forward, name)
	}
	cfg := Default()
	cfg.ForwardKey = "partition"
	require.ErrorContains(t, cfg.Validate(), "forward-key")
	cfg = Default()
	cfg.HotKey = true
	var table strings.Builder
	require.NoError(t, (&Report{Config: reportConfig(cfg)}).WriteTable(&table))
	require.Contains(t, table.String(), "forward key: the order key")
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	var h hist
	for i := 1; i <= 10000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{.5, .9, .99} {
		want := q * 10000
		got := float64(h.quantile(q).Microseconds())
		require.InDelta(t, want, got, want*0.01, "q=%v", q)
	}
	require.Equal(t, 10*time.Millisecond, h.quantile(1))
	s := h.summary()
	require.EqualValues(t, 10000, s.Count)
	require.InDelta(t, 10.0, s.MaxMs, 1e-9)
	for b := range 50 << subBits { // up to 2^55 µs
		{
			lo := lowerOf(b)
			require.Equal(t, b, bucketOf(lo), "bucket %d", b)
		}
	}
	var empty hist
	require.Zero(t, empty.quantile(.5))
}

func TestKindMix(t *testing.T) {
	t.Parallel()
	counts := map[kind]int{}
	for i := range int64(1000) {
		counts[kindOf(i, .25, .1)]++
	}
	require.InDelta(t, 100, counts[kindCheckback], 2)
	require.InDelta(t, 250, counts[kindRollback], 2)
}

// The bench's check-back server answers as the load decided: rollback for
// a message the load rolls back (whose ROLLBACK may come after the first
// check-back), commit for the others and for keys it did not make.
func TestCheckbackDecisionFollowsTheKind(t *testing.T) {
	t.Parallel()
	cfg := Config{RollbackRatio: .25, CheckbackRatio: .1}
	answers := map[clientlib.Decision]int{}
	for seq := range int64(1000) {
		d := cfg.checkbackDecision(fmt.Sprintf("run-%d", seq))
		answers[d]++
		if kindOf(seq, cfg.RollbackRatio, cfg.CheckbackRatio) == kindRollback {
			require.Equal(t, clientlib.DecisionRollback, d, "seq %d", seq)
		} else {
			require.Equal(t, clientlib.DecisionCommit, d, "seq %d", seq)
		}
	}
	require.InDelta(t, 250, answers[clientlib.DecisionRollback], 2)
	require.Equal(t, clientlib.DecisionCommit, cfg.checkbackDecision("no-sequence"))
	require.Equal(t, clientlib.DecisionCommit, cfg.checkbackDecision("plain"))
}

// TestRunExternalNothingForwarded: with --external and no center running,
// nothing is forwarded, and the report says every message is missing after
// the drain timeout.
func TestRunExternalNothingForwarded(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "ec.control"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	cfg := Default()
	cfg.External = true
	cfg.Brokers = cluster.ListenAddrs()
	cfg.ControlTopic = "ec.control"
	cfg.Messages = 20
	cfg.Concurrency = 2
	cfg.Baselines = false
	cfg.DrainTimeout = 300 * time.Millisecond
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.EqualValues(t, 20, rep.Center.Sent)
	require.Zero(t, rep.Center.Forwarded)
	require.EqualValues(t, 20, rep.Center.Missing)
	require.Empty(t, rep.Metrics)
	require.Equal(t, "external center and brokers", rep.Config.Mode)
}

// A run without check-backs keeps the center's first delay, so that a
// COMMIT queued behind a burst is not checked back; one with check-backs
// answers them within the run; a delay given is kept.
func TestFirstDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ratio float64
		set   time.Duration
		want  time.Duration
	}{
		{"no check-backs", 0, 0, verifier.DefaultFirstDelay},
		{"check-backs", 0.1, 0, 100 * time.Millisecond},
		{"given", 1, 3 * time.Second, 3 * time.Second},
		{"given without check-backs", 0, time.Second, time.Second},
	} {
		cfg := Default()
		cfg.CheckbackRatio, cfg.FirstDelay = tc.ratio, tc.set
		require.Equal(t, tc.want, cfg.firstDelay(), tc.name)
	}
}
