package forwarder

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Store is what the forwarder needs from the database.
type Store interface {
	// ClaimSends leases due sends in the given partitions.
	ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error)
	// MarkSent records successful sends.
	MarkSent(ctx context.Context, sent []store.Sent) error
	// Apply records send failures (state.KindSendFailed).
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
}

// Owned is the set of control partitions this instance owns
// (*ingest.Ownership).
type Owned interface {
	// Partitions returns the owned partitions.
	Partitions() []int32
	// Changed returns a channel closed at the next change of the set.
	Changed() <-chan struct{}
}

// Backoff is a capped exponential backoff with jitter: attempt n waits a
// random time in [d/2, d] where d = min(Cap, Base·2ⁿ).
type Backoff struct {
	// Base is the first delay; 0 means 1s.
	Base time.Duration
	// Cap bounds the delay; 0 means 5m.
	Cap time.Duration
	// Rand returns a number in [0, 1) for the jitter; nil means
	// math/rand/v2.Float64. Tests inject a fixed source.
	Rand func() float64
}

// Delay returns the wait before the retry following attempt (0 for the
// first failure).
func (b Backoff) Delay(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	d := b.Cap
	if attempt < 62 {
		if e := b.Base << attempt; e > 0 && e < b.Cap && e>>attempt == b.Base {
			d = e
		}
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	half := d / 2
	return half + time.Duration(r()*float64(d-half))
}

// Default values: a zero field of Config takes these (setDefaults), and the
// binary's configuration (app/config) starts from them (DefaultConfig), so
// the library and the product cannot disagree.
const (
	DefaultMaxAttempts  = 20
	DefaultBackoffBase  = time.Second
	DefaultBackoffCap   = 5 * time.Minute
	DefaultScanInterval = time.Second
	// DefaultBusyScanInterval: Config.BusyScanInterval.
	DefaultBusyScanInterval = 100 * time.Millisecond
	DefaultLease            = 30 * time.Second
	DefaultSendTimeout      = 10 * time.Second
	// DefaultClaimLimit: Config.ClaimLimit, one claim of due messages
	// (the unit of fair claims' turns).
	DefaultClaimLimit = 1000
)

func (b *Backoff) setDefaults() {
	if b.Base == 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Cap == 0 {
		b.Cap = DefaultBackoffCap
	}
}

// check records b's problems (b after defaults) under field.
func (b *Backoff) check(check *fieldcheck.Checker, field string) {
	switch {
	case b.Base <= 0:
		check.Bad(field+".Base", "must be positive, got %s", b.Base)
	case b.Cap < b.Base:
		check.Bad(field+".Cap", "must not be below %s.Base (%s), got %s", field, b.Base, b.Cap)
	}
}

// Breaker pauses a target after consecutive failed batches (nothing
// acknowledged, at least one retryable error): while it is open, messages for
// the target are left to their leases instead of being sent, so an outage
// does not burn every message's attempts; after a cooldown one probe batch
// decides whether it closes. A failed probe doubles the cooldown, up to
// MaxCooldown.
//
// Batches that fail together count once: a failure counts only for a batch
// sent after the previous counted failure was seen, so Failures means that
// many rounds of retries failed one after the other, not one broker error
// seen by several workers at once.
type Breaker struct {
	// Failures is the number of consecutive failed rounds that opens it;
	// 0 means 5, negative disables the breaker.
	Failures int
	// FailingFor is how long the consecutive failures must last before
	// they open it, so that quick retries through a short burst of broker
	// errors do not; 0 means 5s, negative means no minimum.
	FailingFor time.Duration
	// Cooldown is how long it stays open before the first probe; 0 means
	// 1s. Kept short: a probe uses up one error of a short burst, so a long
	// first pause turns a few transient errors into minutes of delay.
	Cooldown time.Duration
	// MaxCooldown is the longest pause after failed probes; 0 means 30s (or
	// Cooldown when that is longer).
	MaxCooldown time.Duration
}

// Config configures a Forwarder. Zero fields take the documented defaults.
type Config struct {
	// Targets are the named forward targets. Required. The forwarder does
	// not close them; their owner does, after Stop.
	Targets map[string]Target
	// DefaultTarget is used for messages that name no target. Required
	// when there are several targets; with one it defaults to that one.
	DefaultTarget string

	// ScanInterval is the period of the scan for due sends (restarts,
	// expired leases, retries); 0 means 1s. A change of the owned
	// partitions scans at once.
	ScanInterval time.Duration
	// BusyScanInterval is the wait after a scan that claimed something
	// (but not a full claim, which claims again at once): while messages
	// keep falling due (scheduled ones at their deliver-at, retries) they
	// wait about this long for the next scan instead of ScanInterval, so
	// a stream of scheduled messages goes out within it; an idle center
	// scans every ScanInterval. 0 means min(100ms, ScanInterval).
	BusyScanInterval time.Duration
	// ClaimLimit is the most messages one scan claims; 0 means
	// DefaultClaimLimit.
	ClaimLimit int
	// Lease is how long claimed messages stay leased to this instance; 0
	// means 30s. It must exceed SendTimeout.
	Lease time.Duration
	// SendTimeout bounds one batch send; 0 means 10s.
	SendTimeout time.Duration
	// InlineTimeout bounds one inline send: the messages a store
	// transaction makes sendable are sent inside it, before the write, and
	// written sent (see Applier); what is not acknowledged in time is
	// written leased and handed over. 0 means 2s; negative turns inline
	// sends off (every message is written leased, then marked sent). It
	// must be shorter than Lease.
	InlineTimeout time.Duration

	// BatchSize is the most records per send call; 0 means 256.
	BatchSize int
	// Concurrency is the number of send batches in flight per target (one
	// per worker; messages with the same forward key share a worker); 0
	// means 4.
	Concurrency int
	// QueueSize is the number of messages waiting per target, split evenly
	// between its workers; 0 means 4096. A handoff to a full queue waits
	// for room (see HandoffWait).
	QueueSize int
	// HandoffWait is the longest one Handoff call waits for room in full
	// queues, so that ingest slows to the forwarding rate instead of
	// dropping; 0 means 5s or half of Lease if that is shorter, negative
	// means no wait. What does not find room in time, what is handed over
	// while the target's breaker is open and what is handed over while
	// stopping is dropped (counted in
	// eventcenter_forward_handoff_dropped_total): the lease brings it back.
	// It must be shorter than Lease (and than the lease the caller took for
	// the messages it hands over).
	HandoffWait time.Duration

	// MarkBatch is the most sent-marks written per statement, and the
	// number of pending marks that triggers a write; 0 means 500.
	MarkBatch int
	// MarkInterval is the longest a sent-mark waits before it is written;
	// 0 means 50ms.
	MarkInterval time.Duration

	// Backoff spaces the retries of a failed send, per message by attempt.
	Backoff Backoff
	// StoreBackoff spaces the retries of failed store writes (sent marks,
	// failures); zero fields mean Base 100ms, Cap 5s.
	StoreBackoff Backoff
	// MaxAttempts is the number of send attempts after which a message is
	// DEAD; 0 means 20.
	MaxAttempts int
	// Breaker pauses a target that keeps failing.
	Breaker Breaker

	// Ordered tells whether per-key order is on (the cluster level gate:
	// every instance runs a release that keeps it). When it is, the scan's
	// claims and the fast path's applies skip messages held back by an
	// earlier-committed message of their order key (store.Claim.Ordered,
	// store.ApplyRequest.Ordered). nil means never; messages with an order
	// key are then forwarded without order, as before.
	Ordered func() bool
	// WriteAhead tells whether ordered messages may be written sent before
	// their send (store.ApplyRequest.WriteAhead; the cluster level gate:
	// every instance waits on sent watermarks and writes back what a
	// replay finds unconfirmed). nil means never.
	WriteAhead func() bool
	// ReleaseOnDead tells, per bizID, whether a message that goes DEAD
	// releases its order key ("skip": the later ones go on) instead of
	// holding it until an operator acts ("hold", the default). nil means
	// hold for every bizID.
	ReleaseOnDead func(bizID string) bool

	// Biz are the per-bizID shares and limits (forward.biz[]; docs/fairness.md):
	// weight in the fair claims, rate limit, cap on messages in flight. A
	// bizID not named has weight 1 and no limit.
	Biz map[string]BizLimits
	// MetricBizIDs get their own biz_id label in the per-bizID metrics, as
	// those of Biz do; the others share "other".
	MetricBizIDs []string
	// OldestFirst turns the fair claims off: the scan claims the oldest
	// due messages first, whatever their bizID (to
	// compare; the limits still hold on the fast path, not in claims).
	OldestFirst bool

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger, scoped by the caller; nil means slog.Default() with
	// component=forwarder.
	Logger *slog.Logger
	// Registerer receives the metrics; nil means they are not registered.
	Registerer prometheus.Registerer
	// OnSent, when set, is called with the number of messages of a bizID
	// this forwarder has written sent (after each sent-mark batch, and
	// after inline sends). It must not block (the console's trends count
	// them).
	OnSent func(bizID string, n int)
}

// DefaultConfig returns a Config holding the defaults New gives zero
// fields, but for the ones derived from other fields (DefaultTarget,
// BusyScanInterval, HandoffWait, Breaker.MaxCooldown), which stay 0 for
// New to derive from the fields as set. The binary's configuration starts
// from it and sets what its settings say; Validate then refuses what a
// setting made zero.
func DefaultConfig() Config {
	var c Config
	c.setFixedDefaults()
	return c
}

// WithDefaults returns c with every zero field given its default, as New
// does; cfg.WithDefaults().Validate() checks a Config before New.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	c.setFixedDefaults()
	c.deriveDefaults()
}

// setFixedDefaults gives the zero fields whose default is a constant
// their default.
func (c *Config) setFixedDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	def(&c.ScanInterval, DefaultScanInterval)
	defInt(&c.ClaimLimit, DefaultClaimLimit)
	def(&c.Lease, DefaultLease)
	def(&c.SendTimeout, DefaultSendTimeout)
	def(&c.InlineTimeout, DefaultInlineTimeout)
	defInt(&c.BatchSize, 256)
	defInt(&c.Concurrency, 4)
	defInt(&c.QueueSize, 4096)
	defInt(&c.MarkBatch, 500)
	def(&c.MarkInterval, 50*time.Millisecond)
	c.Backoff.setDefaults()
	def(&c.StoreBackoff.Base, 100*time.Millisecond)
	def(&c.StoreBackoff.Cap, 5*time.Second)
	defInt(&c.MaxAttempts, DefaultMaxAttempts)
	defInt(&c.Breaker.Failures, 5)
	def(&c.Breaker.FailingFor, 5*time.Second)
	def(&c.Breaker.Cooldown, time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Ordered == nil {
		c.Ordered = func() bool { return false }
	}
	if c.WriteAhead == nil {
		c.WriteAhead = func() bool { return false }
	}
	if c.ReleaseOnDead == nil {
		c.ReleaseOnDead = func(string) bool { return false }
	}
	if c.Logger == nil {
		c.Logger = slog.Default().With("component", "forwarder")
	}
}

// deriveDefaults gives the zero fields whose default depends on other
// fields their default.
func (c *Config) deriveDefaults() {
	if c.DefaultTarget == "" && len(c.Targets) == 1 {
		for name := range c.Targets {
			c.DefaultTarget = name
		}
	}
	if c.BusyScanInterval == 0 {
		c.BusyScanInterval = min(DefaultBusyScanInterval, c.ScanInterval)
	}
	if c.HandoffWait == 0 && c.Lease > 0 {
		c.HandoffWait = min(5*time.Second, c.Lease/2)
	}
	if c.Breaker.MaxCooldown == 0 {
		c.Breaker.MaxCooldown = max(30*time.Second, c.Breaker.Cooldown)
	}
	if c.StoreBackoff.Rand == nil {
		c.StoreBackoff.Rand = c.Backoff.Rand
	}
}

// MinLease is the shortest Lease: a lease is written to the store as a
// deadline, and a shorter one would run out while its send is still
// being made.
const MinLease = time.Second

// Validate checks a Config as New takes it, after its defaults
// (WithDefaults; DefaultConfig for the fields the caller sets): a field
// with a constant default must hold a valid value, 0 included, and only
// the derived ones (see DefaultConfig) may be 0. Its errors name the
// field (fieldcheck.Problems reads them back). It is the one home of
// these limits: app/config reports its problems under the settings'
// names rather than checking the fields again.
func (c Config) Validate() error {
	check := fieldcheck.Checker{Prefix: "forwarder config"}
	bad := check.Bad
	if len(c.Targets) == 0 {
		bad("Targets", "at least one forward target is required")
	}
	names := make([]string, 0, len(c.Targets))
	for name, t := range c.Targets {
		names = append(names, name)
		if name == "" {
			bad("Targets", "a target has an empty name")
		}
		if t == nil {
			bad(fmt.Sprintf("Targets[%q]", name), "nil target")
		}
	}
	slices.Sort(names)
	switch {
	case c.DefaultTarget == "" && len(c.Targets) > 1:
		bad("DefaultTarget", "required with several targets (one of %s)", strings.Join(names, ", "))
	case c.DefaultTarget != "" && c.Targets[c.DefaultTarget] == nil && len(c.Targets) > 0:
		bad("DefaultTarget", "%q is not one of the targets (%s)", c.DefaultTarget, strings.Join(names, ", "))
	}
	pos := func(field string, d time.Duration) {
		if d <= 0 {
			bad(field, "must be positive, got %s", d)
		}
	}
	posInt := func(field string, n int) {
		if n <= 0 {
			bad(field, "must be positive, got %d", n)
		}
	}
	pos("ScanInterval", c.ScanInterval)
	if c.BusyScanInterval < 0 {
		bad("BusyScanInterval", "must not be negative (0 means min(%s, ScanInterval)), got %s", DefaultBusyScanInterval, c.BusyScanInterval)
	}
	posInt("ClaimLimit", c.ClaimLimit)
	if c.Lease < MinLease {
		bad("Lease", "must be at least %s, got %s", MinLease, c.Lease)
	}
	// What must be shorter than Lease is checked against a valid one.
	lease := max(c.Lease, MinLease)
	switch {
	case c.SendTimeout <= 0:
		bad("SendTimeout", "must be positive and shorter than Lease (%s), got %s", c.Lease, c.SendTimeout)
	case c.SendTimeout >= lease:
		bad("SendTimeout", "must be shorter than Lease (%s), or a send could outlive its lease, got %s", c.Lease, c.SendTimeout)
	}
	if c.InlineTimeout == 0 || c.InlineTimeout >= lease {
		bad("InlineTimeout", "must be shorter than Lease (%s), and not 0 (negative turns inline sends off), got %s", c.Lease, c.InlineTimeout)
	}
	posInt("BatchSize", c.BatchSize)
	posInt("Concurrency", c.Concurrency)
	posInt("QueueSize", c.QueueSize)
	if c.HandoffWait > 0 && c.HandoffWait >= lease {
		bad("HandoffWait", "must be shorter than Lease (%s), or a waiting handoff could outlive its lease, got %s", c.Lease, c.HandoffWait)
	}
	posInt("MarkBatch", c.MarkBatch)
	pos("MarkInterval", c.MarkInterval)
	posInt("MaxAttempts", c.MaxAttempts)
	pos("Breaker.Cooldown", c.Breaker.Cooldown)
	switch {
	case c.Breaker.MaxCooldown < 0:
		bad("Breaker.MaxCooldown", "must not be negative (0 means max(30s, Breaker.Cooldown)), got %s", c.Breaker.MaxCooldown)
	case c.Breaker.MaxCooldown > 0 && c.Breaker.MaxCooldown < c.Breaker.Cooldown:
		bad("Breaker.MaxCooldown", "must not be below Breaker.Cooldown (%s), got %s", c.Breaker.Cooldown, c.Breaker.MaxCooldown)
	}
	for _, biz := range slices.Sorted(maps.Keys(c.Biz)) {
		c.Biz[biz].check(&check, biz)
	}
	c.Backoff.check(&check, "Backoff")
	c.StoreBackoff.check(&check, "StoreBackoff")
	return check.Err()
}
