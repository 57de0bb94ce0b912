package center

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

func TestComputeLevel(t *testing.T) {
	t.Parallel()
	a := postgres.Instance{ID: "a", Level: 2, Version: "v2"}
	b := postgres.Instance{ID: "b", Level: 1, Version: "v1"}
	s := computeLevel(nil, -1)
	require.Zero(t, s.Level)
	require.Contains(t, s.Reason, "no instance")
	s = computeLevel([]postgres.Instance{a}, 1)
	require.Equal(t, 2, s.Level)
	require.True(t, s.AtLeast(2))
	s = computeLevel([]postgres.Instance{a, b}, 2)
	require.Equal(t, 1, s.Level)
	require.False(t, s.AtLeast(2))
	require.Contains(t, s.Reason, "b, version v1")
	require.Equal(t, 1, s.Lowest)
	s = computeLevel([]postgres.Instance{a}, 2)
	require.Zero(t, s.Level, "a member that reports nothing runs an older release")
	require.Equal(t, 2, s.Lowest, "the lowest reported level ignores silent members")
	require.Contains(t, s.Reason, "an older release is running")
	s = computeLevel([]postgres.Instance{a}, -1)
	require.Equal(t, 2, s.Level, "the group could not be read: the reports decide")
}

// The gate of an instance at level 2 opens (for level 2) only while every
// live instance reports 2: it closes when a level-1 instance joins, opens
// again when that one leaves, and stays closed while the consumer group
// has a member that reports nothing (a release before levels).
func TestLevelGateOpensAndCloses(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	reg := pgRegistry{pool}
	var members atomic.Int64
	count := func(ctx context.Context) int { return int(members.Load()) }
	var logs logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	const interval = 50 * time.Millisecond
	a := newLevelGate(reg, count, postgres.Instance{ID: "a", Level: 2, Version: "v2", StartedAt: time.Now()}, interval, log)
	members.Store(1)
	require.NoError(t, a.Start(t.Context()))
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	open := func() bool { return a.State().AtLeast(2) }
	require.Eventually(t, open, 5*time.Second, 10*time.Millisecond, "alone at level 2: %+v", a.State())

	b := newLevelGate(reg, count, postgres.Instance{ID: "b", Level: 1, Version: "v1", StartedAt: time.Now()}, interval, log)
	members.Store(2)
	require.NoError(t, b.Start(t.Context()))
	require.Eventually(t, func() bool { s := a.State(); return s.Level == 1 && s.Instances == 2 }, 5*time.Second, 10*time.Millisecond,
		"a level-1 instance joined: %+v", a.State())
	require.False(t, open())

	require.NoError(t, b.Stop(t.Context()))
	members.Store(1)
	require.Eventually(t, open, 5*time.Second, 10*time.Millisecond, "the level-1 instance left: %+v", a.State())

	members.Store(2) // a member that writes no heartbeat
	require.Eventually(t, func() bool { return a.State().Level == 0 }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, a.State().Reason, "an older release is running")
	members.Store(1)
	require.Eventually(t, open, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, logs.String(), "msg=\"cluster level\" level=1")
	require.Contains(t, logs.String(), "msg=\"cluster level\" level=2")
}

// An instance that dies without a clean stop drops out when its heartbeat
// is older than the ttl.
func TestLevelGateForgetsDeadInstances(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	reg := pgRegistry{pool}
	require.NoError(t, reg.Report(t.Context(), postgres.Instance{ID: "dead", Level: 1, Version: "v1", StartedAt: time.Now()}))
	a := newLevelGate(reg, nil, postgres.Instance{ID: "a", Level: 2, Version: "v2", StartedAt: time.Now()}, 50*time.Millisecond, slog.New(slog.DiscardHandler))
	require.NoError(t, a.Start(t.Context()))
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	require.Eventually(t, func() bool { return a.State().Level == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return a.State().AtLeast(2) }, 5*time.Second, 10*time.Millisecond,
		"the dead instance's heartbeat expired: %+v", a.State())
}

// Without a store that records instances the level stays 0 and says why.
func TestLevelGateWithoutRegistry(t *testing.T) {
	t.Parallel()
	g := newLevelGate(nil, nil, postgres.Instance{ID: "a", Level: 2}, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	require.NoError(t, g.Start(t.Context()))
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, g.Stop(t.Context()))
	require.Zero(t, g.State().Level)
	require.Contains(t, g.State().Reason, "does not record instances")
}

// Per-key order switches on only at OrderLevel, and /readyz says so.
func TestOrderingFollowsTheClusterLevel(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, FeatureLevel, OrderLevel, "this release keeps per-key order")
	require.Contains(t, orderingState(LevelState{Level: OrderLevel - 1}, false, ""), "per-key order: off until the cluster level reaches 2")
	require.Equal(t, "per-key order: on", orderingState(LevelState{Level: OrderLevel}, true, ""))
	require.False(t, (&Center{}).Ordering(), "no gate: off")

	// Latched: a member that has not reported yet does not switch it off.
	reg := &memRegistry{}
	members := 1
	g := newLevelGate(reg, func(context.Context) int { return members }, postgres.Instance{ID: "a", Level: FeatureLevel, Version: "v"},
		time.Second, slog.New(slog.DiscardHandler))
	c := &Center{level: g}
	g.tick(t.Context())
	require.True(t, c.Ordering())
	members = 2 // a restarted center joined the group, not reported yet
	g.tick(t.Context())
	require.Zero(t, g.State().Level)
	require.True(t, c.Ordering(), "stays on")
}

// Scheduled delivery switches on at ScheduleLevel, stays on while a
// member has not reported yet, switches off when an instance of a lower
// level reports (an older release, or a rollback), and on again when it
// leaves; ingest's reason and /readyz say why.
func TestSchedulingFollowsTheClusterLevel(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, FeatureLevel, ScheduleLevel, "this release keeps deliver-at")
	on, why := (&Center{}).Scheduling()
	require.False(t, on, "no gate: off")
	require.Contains(t, why, "scheduled delivery is off until every center runs a release of cluster level 3")

	reg := &memRegistry{}
	members := 1
	var logs logbuf.Buffer
	g := newLevelGate(reg, func(context.Context) int { return members }, postgres.Instance{ID: "a", Level: FeatureLevel, Version: "v3"},
		time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
	c := &Center{level: g}
	on, _ = c.Scheduling()
	require.False(t, on, "before the first report: off")
	g.tick(t.Context())
	on, _ = c.Scheduling()
	require.True(t, on)
	require.Equal(t, "scheduled delivery: on", schedulingState(on, g.State()))

	members = 2 // a restarted center joined the group, not reported yet
	g.tick(t.Context())
	require.Zero(t, g.State().Level)
	on, _ = c.Scheduling()
	require.True(t, on, "a silent member does not switch it off")

	// An instance of the release before scheduling (level 2) reports.
	require.NoError(t, reg.Report(t.Context(), postgres.Instance{ID: "old", Level: ScheduleLevel - 1, Version: "v2"}))
	g.tick(t.Context())
	on, why = c.Scheduling()
	require.False(t, on)
	require.Contains(t, why, "(now 2: lowest of 2 live instances (old, version v2))")
	require.Contains(t, why, "replay this record")
	require.Contains(t, schedulingState(on, g.State()), "scheduled delivery: off until the cluster level reaches 3")
	require.Contains(t, logs.String(), "scheduled delivery off")
	require.True(t, c.Ordering(), "per-key order stays on: level 2 keeps it")

	reg.in, members = reg.in[:1], 1 // the old instance left
	g.tick(t.Context())
	on, _ = c.Scheduling()
	require.True(t, on)
}

// Without a store that records instances scheduling is not gated.
func TestSchedulingWithoutRegistry(t *testing.T) {
	t.Parallel()
	g := newLevelGate(nil, nil, postgres.Instance{ID: "a", Level: FeatureLevel}, time.Second, slog.New(slog.DiscardHandler))
	on, _ := (&Center{level: g}).Scheduling()
	require.True(t, on)
	require.False(t, (&Center{level: g}).Ordering(), "the gate alone does not decide order without a registry")
}

// Without a store that records instances per-key order is on, as
// scheduling is, except on a sharded store of several shards, which
// cannot keep it; /readyz says which.
func TestOrderingWithoutRegistry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store config.Store
		on    bool
	}{
		{config.Store{Driver: "sqlite"}, true},
		{config.Store{Driver: "mysql"}, true},
		{config.Store{Driver: "sharded", Shards: []config.StoreShard{{DSN: "a"}}}, true},
		{config.Store{Driver: "sharded", Shards: []config.StoreShard{{DSN: "a"}, {DSN: "b"}}}, false},
	} {
		g := newLevelGate(nil, nil, postgres.Instance{ID: "a", Level: FeatureLevel}, time.Second, slog.New(slog.DiscardHandler))
		g.orderWithoutRegistry(tc.store)
		c := &Center{level: g}
		require.Equal(t, tc.on, c.Ordering(), "%s with %d shards", tc.store.Driver, len(tc.store.Shards))
		text := orderingState(g.State(), c.Ordering(), g.orderOff)
		if tc.on {
			require.Equal(t, "per-key order: on", text)
		} else {
			require.Contains(t, text, "a sharded store of 2 shards cannot keep it")
		}
	}
}

// memRegistry is an instance registry in memory (no ttl).
type memRegistry struct{ in []postgres.Instance }

func (r *memRegistry) Report(_ context.Context, in postgres.Instance) error {
	for i := range r.in {
		if r.in[i].ID == in.ID {
			r.in[i] = in
			return nil
		}
	}
	r.in = append(r.in, in)
	return nil
}

func (r *memRegistry) Live(context.Context, time.Duration) ([]postgres.Instance, error) {
	return r.in, nil
}

func (r *memRegistry) Forget(context.Context, string) error { return nil }

// Writing ahead switches on at AheadLevel, and off as soon as the level
// drops below it: when an instance of the release before (level 3)
// reports, and when a member has not reported yet (unlike per-key order,
// which stays on); /readyz and the logs say so.
func TestWritingAheadFollowsTheClusterLevel(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, FeatureLevel, AheadLevel, "this release waits on sent watermarks")
	require.False(t, (&Center{}).WritingAhead(), "no gate: off")

	reg := &memRegistry{}
	members := 1
	var logs logbuf.Buffer
	g := newLevelGate(reg, func(context.Context) int { return members }, postgres.Instance{ID: "a", Level: FeatureLevel, Version: "v4"},
		time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
	c := &Center{level: g}
	require.False(t, c.WritingAhead(), "before the first report: off")
	g.tick(t.Context())
	require.True(t, c.WritingAhead())
	require.Contains(t, aheadState(g.State(), true), "written ahead: on")

	members = 2 // a member that has not reported: it may be an older release
	g.tick(t.Context())
	require.False(t, c.WritingAhead())
	require.True(t, c.Ordering(), "per-key order stays on")
	members = 1
	g.tick(t.Context())
	require.True(t, c.WritingAhead())

	require.NoError(t, reg.Report(t.Context(), postgres.Instance{ID: "old", Level: AheadLevel - 1, Version: "v3"}))
	members = 2
	g.tick(t.Context())
	require.False(t, c.WritingAhead())
	require.Contains(t, logs.String(), "no longer written ahead")
	require.Contains(t, aheadState(g.State(), false), "off until the cluster level reaches 4")
}
