package center

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/internal/version"
	"github.com/eventcenter/eventcenter/store/postgres"
)

// FeatureLevel is this binary's feature level. The compatibility rule:
// releases N and N-1 run together on the schema of N, and a feature that
// needs every instance at level L (per-key order, say) switches on only
// when the cluster level (the lowest level any live instance reports) is
// at least L. Raise it in the release that adds such a feature; releases
// before this one report nothing and count as level 0.
const FeatureLevel = 4

// OrderLevel is the cluster level at which per-key order switches on
// (level 2: every instance claims and applies in key order; an instance
// of level 1 would forward ordered messages without order).
const OrderLevel = 2

// ScheduleLevel is the cluster level at which scheduled delivery
// (ec-deliver-at, ec-delay) is on (level 3: every instance keeps a
// message's deliver-at). An instance of an earlier level ignores the
// headers and the deliver_at column: a scheduled PREPARE it ingests is
// stored unscheduled, and a scheduled message whose COMMIT or check-back
// answer it applies is sent at once, early. So while an instance below
// ScheduleLevel is live, this release dead-letters scheduled PREPAREs
// with the reason (replay them once the upgrade is done).
const ScheduleLevel = 3

// AheadLevel is the cluster level at which ordered messages are written
// ahead on PostgreSQL (level 4, migration 0009: every instance waits on
// the sent watermarks and writes back what a replay finds unconfirmed).
// An instance of an earlier level reads a message written ahead as sent:
// taking over its partition, it would never send it again if its sender
// died before the confirmation, and it would send the key's next message
// without waiting for that confirmation. So writing ahead is on only
// while every live instance reports this level; below it, ordered
// messages take the path of level 2 (pending, then marked sent).
const AheadLevel = 4

// LevelState is what an instance knows of the cluster's level.
type LevelState struct {
	// Level is the lowest level of the live instances, 0 when unknown or
	// when some group member does not report one (a release before
	// levels).
	Level int
	// Instances is how many live instances report a level; Members how
	// many members the control topic's consumer group has (-1: unknown).
	Instances, Members int
	// Lowest is the lowest level the live instances report (0: none
	// reports); unlike Level it ignores group members that report
	// nothing.
	Lowest int
	// Reason says how Level was decided, for /readyz and the logs.
	Reason string
}

// AtLeast reports whether every instance runs at level n or later.
func (s LevelState) AtLeast(n int) bool { return s.Level >= n }

// computeLevel is the rule: the lowest reported level, unless the group
// has more members than instances that report (one runs a release that
// does not report: level 0). members < 0 means the group could not be
// read; the reports alone decide then.
func computeLevel(live []postgres.Instance, members int) LevelState {
	s := LevelState{Instances: len(live), Members: members}
	if len(live) == 0 {
		s.Reason = "no instance reports a level yet"
		return s
	}
	low := live[0]
	for _, in := range live[1:] {
		if in.Level < low.Level {
			low = in
		}
	}
	s.Lowest = low.Level
	if members > len(live) {
		s.Reason = fmt.Sprintf("%d consumer group members but %d instances report a level: an older release is running", members, len(live))
		return s
	}
	s.Level = low.Level
	s.Reason = fmt.Sprintf("lowest of %d live instances (%s, version %s)", len(live), low.ID, low.Version)
	return s
}

// instanceRegistry records heartbeats (store/postgres on the center's pool).
type instanceRegistry interface {
	Report(ctx context.Context, in postgres.Instance) error
	Live(ctx context.Context, ttl time.Duration) ([]postgres.Instance, error)
	Forget(ctx context.Context, id string) error
}

type pgRegistry struct{ pool *pgxpool.Pool }

func (r pgRegistry) Report(ctx context.Context, in postgres.Instance) error {
	return postgres.ReportInstance(ctx, r.pool, in)
}

func (r pgRegistry) Live(ctx context.Context, ttl time.Duration) ([]postgres.Instance, error) {
	return postgres.LiveInstances(ctx, r.pool, ttl)
}

func (r pgRegistry) Forget(ctx context.Context, id string) error {
	return postgres.ForgetInstance(ctx, r.pool, id)
}

// groupMembers counts the control topic consumer group's members; -1 when
// it cannot tell.
type groupMembers func(ctx context.Context) int

func kafkaGroupMembers(adm *kadm.Client, group string) groupMembers {
	return func(ctx context.Context) int {
		groups, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return -1
		}
		g, ok := groups[group]
		if !ok || g.Err != nil {
			return -1
		}
		return len(g.Members)
	}
}

// levelGate reports this instance's level every interval and works out
// the cluster level; it logs every change.
type levelGate struct {
	*startstop.Loop
	reg     instanceRegistry
	members groupMembers
	self    postgres.Instance
	ttl     time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	state LevelState
	// ordered latches per-key order on: once the cluster level reached
	// OrderLevel, a member that joins and has not reported yet (a
	// restarted center of this release, most likely) does not switch it
	// off again. Enforcing order never loses or holds a message for good;
	// an older release that joins forwards without order whatever this
	// instance does.
	ordered atomic.Bool
	// scheduling is on once the cluster level reached ScheduleLevel and
	// off again only when a live instance reports a lower level (a
	// release without scheduling runs, a rollback say): a member that has
	// not reported yet does not switch it off, as for ordered. Always on
	// without a registry (see newLevelGate).
	scheduling atomic.Bool
	// orderOff, when set, is why per-key order stays off whatever the
	// level (see orderWithoutRegistry).
	orderOff string
	// ahead is on while the cluster level is at least AheadLevel, and off
	// as soon as it is not (an instance of an older release, or one that
	// has not reported yet, joined): writing behind is always safe.
	ahead atomic.Bool
}

func newInstanceID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// newLevelGate: reg nil means the store cannot record instances (SQLite,
// MySQL, sharded): the level stays 0 and says why.
func newLevelGate(reg instanceRegistry, members groupMembers, self postgres.Instance, interval time.Duration, log *slog.Logger) *levelGate {
	g := &levelGate{reg: reg, members: members, self: self, ttl: 4 * interval, log: log,
		state: LevelState{Members: -1, Reason: "not reported yet"}}
	if reg == nil {
		g.state.Reason = "this store does not record instances: the gated features are not gated here (roll every instance before producers use them)"
		// Scheduled delivery is not gated where no level can be known:
		// SQLite runs one center, and on MySQL or a sharded store the
		// operator rolls every instance before producers schedule
		// (docs/upgrading.md).
		g.scheduling.Store(true)
	}
	g.Loop = startstop.NewLoop(interval, g.tick)
	return g
}

func (g *levelGate) tick(ctx context.Context) {
	if g.reg == nil {
		return
	}
	if err := g.reg.Report(ctx, g.self); err != nil {
		if ctx.Err() == nil {
			g.log.Warn("cluster level: heartbeat failed", "err", err)
		}
		return
	}
	live, err := g.reg.Live(ctx, g.ttl)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("cluster level: reading instances failed", "err", err)
		}
		return
	}
	members := -1
	if g.members != nil {
		members = g.members(ctx)
	}
	s := computeLevel(live, members)
	g.mu.Lock()
	old := g.state
	g.state = s
	g.mu.Unlock()
	if s.AtLeast(OrderLevel) && !g.ordered.Swap(true) {
		g.log.Info("per-key order on: every live instance keeps it", "level", s.Level)
	}
	if on := s.AtLeast(AheadLevel); g.ahead.Swap(on) != on {
		if on {
			g.log.Info("ordered messages written ahead: every live instance waits on sent watermarks", "level", s.Level)
		} else {
			g.log.Warn("ordered messages no longer written ahead: a live instance may not wait on sent watermarks",
				"level", s.Level, "reason", s.Reason)
		}
	}
	switch {
	case s.AtLeast(ScheduleLevel):
		if !g.scheduling.Swap(true) {
			g.log.Info("scheduled delivery on: every live instance keeps deliver-at", "level", s.Level)
		}
	case s.Instances > 0 && s.Lowest < ScheduleLevel:
		if g.scheduling.Swap(false) {
			g.log.Warn("scheduled delivery off: a live instance of an older release would send scheduled messages early; scheduled PREPAREs go to the dead-letter topic",
				"level", s.Lowest, "reason", s.Reason)
		}
	}
	if s.Level != old.Level || s.Instances != old.Instances {
		g.log.Info("cluster level", "level", s.Level, "this_instance_level", g.self.Level,
			"instances", s.Instances, "group_members", s.Members, "reason", s.Reason,
			"per_key_order", s.AtLeast(OrderLevel))
	}
}

// State is the cluster level as last worked out.
func (g *levelGate) State() LevelState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

// Stop stops the heartbeat and deletes this instance's row, so the level
// moves on at once rather than after the ttl.
func (g *levelGate) Stop(ctx context.Context) error {
	err := g.Loop.Stop(ctx)
	if g.reg != nil {
		if ferr := g.reg.Forget(ctx, g.self.ID); ferr != nil {
			g.log.Warn("cluster level: forgetting this instance failed; it drops out after its heartbeat expires", "err", ferr)
		}
	}
	return err
}

func (c *Center) newLevelGate(cfg config.Config, opt Options) *levelGate {
	interval := opt.LevelInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	var reg instanceRegistry
	if c.pool != nil {
		reg = pgRegistry{c.pool}
	}
	self := postgres.Instance{ID: newInstanceID(), Level: FeatureLevel, Version: version.Version, StartedAt: time.Now()}
	g := newLevelGate(reg, kafkaGroupMembers(kadm.NewClient(c.dlqClient), cfg.Kafka.Group), self, interval,
		opt.Logger.With("component", "clusterlevel", "instance", self.ID))
	if reg == nil {
		g.orderWithoutRegistry(cfg.Store)
	}
	return g
}

// orderWithoutRegistry decides per-key order where no level can be known
// (SQLite, MySQL, sharded), by the rule scheduled delivery follows there:
// on. SQLite runs one center; on MySQL the operator rolls every instance
// before producers send order keys (docs/upgrading.md), as for scheduling.
// A sharded store of several shards cannot keep the order (a key's
// messages live on several databases, store/sharded.ErrOrderAcrossShards):
// off, and /readyz says why.
func (g *levelGate) orderWithoutRegistry(st config.Store) {
	if st.Driver == "sharded" && len(st.Shards) > 1 {
		g.orderOff = fmt.Sprintf("per-key order: off (a sharded store of %d shards cannot keep it; messages with an order key are stored with their order data and forwarded without order)", len(st.Shards))
		return
	}
	g.ordered.Store(true)
}

// Ordering tells whether per-key order is on: the cluster level is at
// least OrderLevel. Until then messages with an order key are stored with
// their order key and sequence, and forwarded without order.
// Once on, it stays on in this instance (see levelGate.ordered); Start
// works the level out once before the forwarder starts, so a restarted
// center does not forward in its first seconds without order.
func (c *Center) Ordering() bool { return c.level != nil && c.level.ordered.Load() }

// WritingAhead tells whether ordered messages are written ahead
// (AheadLevel): the gate of forwarder.Config.WriteAhead.
func (c *Center) WritingAhead() bool { return c.level != nil && c.level.ahead.Load() }

// aheadState says, for /readyz, whether ordered messages are written
// ahead (PostgreSQL).
func aheadState(lv LevelState, on bool) string {
	if on {
		return "ordered messages written ahead: on (one write per message, confirmed by sent watermarks)"
	}
	return fmt.Sprintf("ordered messages written ahead: off until the cluster level reaches %d (written pending, then marked sent); level now %d", AheadLevel, lv.Level)
}

// orderingState says, for /readyz and the logs, whether per-key order is
// on and why.
func orderingState(lv LevelState, on bool, off string) string {
	if on {
		return "per-key order: on"
	}
	if off != "" {
		return off
	}
	return fmt.Sprintf("per-key order: off until the cluster level reaches %d (messages with an order key are stored with their order data and forwarded without order)", OrderLevel)
}

// Scheduling tells whether scheduled delivery is on, and if not why (for
// ingest's dead letters): on once the cluster level reached
// ScheduleLevel, until a live instance reports a lower level; always on
// with a store that records no instances.
func (c *Center) Scheduling() (bool, string) {
	if c.level != nil && c.level.scheduling.Load() {
		return true, ""
	}
	return false, schedulingOff(c.level)
}

func schedulingOff(g *levelGate) string {
	lv := LevelState{Reason: "not reported yet"}
	if g != nil {
		lv = g.State()
	}
	return fmt.Sprintf("scheduled delivery is off until every center runs a release of cluster level %d or later (now %d: %s); replay this record from the dead-letter topic once the upgrade is done",
		ScheduleLevel, lv.Level, lv.Reason)
}

// schedulingState is the /readyz line of Scheduling.
func schedulingState(on bool, lv LevelState) string {
	if on {
		return "scheduled delivery: on"
	}
	return fmt.Sprintf("scheduled delivery: off until the cluster level reaches %d (PREPAREs with ec-deliver-at or ec-delay go to the dead-letter topic); level now %d", ScheduleLevel, lv.Level)
}

// ClusterLevel is the cluster's feature level as this instance last saw
// it: a feature that needs every instance at level L asks
// ClusterLevel().AtLeast(L).
func (c *Center) ClusterLevel() LevelState { return c.level.State() }
