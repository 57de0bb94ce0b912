package verifier

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// Jitter is how backoff delays are randomised.
type Jitter uint8

const (
	// JitterFull draws the delay uniformly from [0, d).
	JitterFull Jitter = iota
	// JitterEqual draws it from [d/2, d).
	JitterEqual
	// JitterNone uses d as is.
	JitterNone
)

// Policy is the check-back timing of a bizID. In Config.Policy a zero field
// takes the documented default; in a BizConfig it takes Config.Policy's.
type Policy struct {
	// FirstDelay is the delay from PREPARE to the first check-back when the
	// envelope names none (its ec-check-after). Default 30s.
	FirstDelay time.Duration
	// BackoffBase is the delay after the first unknown answer; it doubles
	// with every further one up to BackoffCap. Default 10s.
	BackoffBase time.Duration
	// BackoffCap bounds the delay. Default 5m.
	BackoffCap time.Duration
	// MaxAttempts is the number of check-backs after which a message that
	// is still unknown is parked as VERIFY_FAILED. Default 15.
	MaxAttempts int
	// Timeout bounds one call. Default 3s.
	Timeout time.Duration
	// Jitter randomises each delay; default full jitter. Set JitterSet to
	// override it in a BizConfig (the zero value is JitterFull).
	Jitter    Jitter
	JitterSet bool
}

// Default values: a zero field of Config takes these (setDefaults), and the
// binary's configuration (app/config) starts from them (DefaultConfig), so
// the library and the product cannot disagree.
const (
	DefaultFirstDelay  = envelope.DefaultCheckAfter
	DefaultBackoffBase = 10 * time.Second
	DefaultBackoffCap  = 5 * time.Minute
	DefaultMaxAttempts = 15
	DefaultTimeout     = 3 * time.Second

	DefaultWorkers             = 64
	DefaultEndpointConcurrency = 8
	DefaultLease               = 2 * time.Minute
	DefaultBreakerFailures     = 5
	DefaultBreakerCoolDown     = 30 * time.Second
)

// BizConfig is the configuration of one bizID.
type BizConfig struct {
	// Policy overrides Config.Policy field by field (zero = inherit).
	Policy
	// Allow lists the endpoints the center may call for this bizID: exact
	// origins (http://10.0.0.1:8080, tri://svc:50051) or URL prefixes
	// (http://10.0.0.1:8080/checkback/). Scheme, host and port must match
	// exactly; a prefix matches whole path segments. Config.Allow is added.
	Allow []string
	// Endpoint is used when the envelope names none; with ForceEndpoint it
	// is always used and the envelope's is ignored. It is implicitly allowed.
	Endpoint      string
	ForceEndpoint bool
	// Secret, when set, signs every check-back request of this bizID with
	// the EC-Signature header (see the package documentation).
	Secret string
	// SecretSource, when set, gives the secret at each call in place of
	// Secret (a secret read from a file that may be rotated); an empty
	// answer falls back to Secret.
	SecretSource func() string
	// SignV1, with a secret, adds the legacy v1 signature to the v2 one
	// (EC-Signature: t=..,v2=..,v1=..) so that producers whose handler
	// reads v1 only keep answering while they upgrade. v1 can be moved from
	// one request onto another and does not cover the Host or the Triple
	// headers: set it for the transition only, and turn it off once the
	// bizID's producers run a v2 handler. Default off (v2 only).
	SignV1 bool
	// Weight is this bizID's share of check-back claims and workers
	// against the other bizIDs with due check-backs (docs/checkback.md): claims
	// and calls serve bizIDs in turn, Weight at a time. Default 1.
	Weight int
	// Rate, when positive, bounds this bizID's check-back calls per second
	// (a token bucket of Burst). Over it check-backs wait, without
	// spending an attempt; what would wait long is put off (deferred).
	// Default 0: no limit.
	Rate float64
	// Burst is the token bucket's size for Rate. Default max(1, Rate).
	Burst int
}

// Config configures a Verifier.
type Config struct {
	// Policy is the default timing (see Policy for the defaults).
	Policy Policy
	// BizIDs holds per-bizID configuration. A bizID not listed uses Policy
	// and Allow only.
	BizIDs map[string]BizConfig
	// Allow lists endpoints allowed for every bizID (same syntax as
	// BizConfig.Allow). Empty by default: nothing is called unless allowed.
	Allow []string

	// Workers bounds concurrent calls overall. Default 64.
	Workers int
	// BizWorkers bounds the calls one bizID may have running at once, so
	// that one bizID with slow endpoints never holds every worker; while
	// several bizIDs have check-backs waiting, each is also held to its
	// weighted share of Workers (at least one). Default 3/4 of Workers
	// (at least 1).
	BizWorkers int
	// EndpointConcurrency bounds concurrent calls per endpoint (host:port).
	// Default 8 (at most Workers).
	EndpointConcurrency int
	// EndpointQueue is how many claimed messages may wait in memory for a
	// busy endpoint; they are taken by its calls as they end, without a
	// goroutine waiting. Beyond it messages are put off. A message that
	// waited so long that its lease could run out before its answer is
	// written is dropped from the queue and left to the next claim.
	// Default 64.
	EndpointQueue int
	// ClaimLimit is the most messages claimed at once. A claim's cost is
	// mostly fixed (on PostgreSQL with a large backlog of due rows it
	// reads and sorts them all: ~30 ms for 256 or for 1,024 here), so
	// claims are large. Default 1024.
	ClaimLimit int
	// ClaimAhead is how many claimed messages may wait in memory for a
	// free worker (the claim-ahead buffer). A claim is made when the
	// buffer is at most half full, for up to ClaimLimit messages and no
	// more than the free workers plus the buffer's free room, so messages
	// are never put off merely because every worker is busy. A buffered
	// message that waited so long that its lease could run out is dropped
	// and left to the next claim. Default 2×ClaimLimit.
	ClaimAhead int
	// Lease is how long claimed messages stay claimed. A claimed message may
	// wait for one call of its endpoint and then make its own, so the lease
	// must be at least three times the longest Timeout. Default 2m.
	Lease time.Duration
	// PollInterval is how often due check-backs are looked for when the
	// last claim found none or little. Default 1s.
	PollInterval time.Duration
	// BusyDelay is the least a message is put off, without burning an
	// attempt, when its endpoint is at its concurrency cap. Beyond it,
	// put-offs for one endpoint are spaced by its average call time divided
	// by EndpointConcurrency, so a backlog comes back at the pace the
	// endpoint answers. Default 100ms.
	BusyDelay time.Duration
	// MaxPutOff bounds that spacing: no message is put off further than
	// this for a busy endpoint (it is put off again if still busy then).
	// Default 30s.
	MaxPutOff time.Duration
	// BreakerFailures is the number of distinct message keys whose calls
	// to an endpoint must fail in a row (no answer in time, a transport
	// error, HTTP 5xx or 429; see endpointFault) to open its circuit.
	// Answers for one key, however bad, never open it. Default 5.
	BreakerFailures int
	// BreakerCoolDown is how long a circuit stays open before one probe is
	// let through (wall clock). Messages for an open endpoint are put off
	// by this much (plus up to half of it, random) without burning an
	// attempt. For the first half of it after the circuit becomes
	// half-open, the probe is kept for a message never called before.
	// Default 30s.
	BreakerCoolDown time.Duration
	// ApplyBatch is the most answers written in one store.Apply; answers
	// are also flushed every ApplyInterval. Defaults 256 and 20ms.
	ApplyBatch    int
	ApplyInterval time.Duration
	// Appliers is how many store.Apply calls of answers may run at once.
	// Each answer is in one batch only, and the stores lock rows in id
	// order, so concurrent batches are safe. Default 4.
	Appliers int

	// Resolver finds the providers of registry endpoints (zookeeper://,
	// resolver.ZooKeeper); without it such endpoints are parked with the
	// reason.
	Resolver Resolver
	// Transport carries the calls; nil builds one with limits suited to
	// EndpointConcurrency (tests pass httptest transports; set TLS here).
	Transport http.RoundTripper
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// OnOutcome, when set, is called after each check-back call with its
	// endpoint (as it is logged, credentials redacted) and outcome:
	// "commit", "rollback", "unknown" or "error" (the call failed). It
	// must not block (the console's trends count them).
	OnOutcome func(endpoint, outcome string)
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand returns a number in [0, 1) for jitter; it is called from several
	// goroutines and must be safe for that. nil uses math/rand/v2.
	Rand func() float64
	// TracerProvider, when set, records an "eventcenter.checkback" span per
	// call, a child of the producer's span (the message's traceparent
	// header). Calls carry the W3C traceparent either way.
	TracerProvider trace.TracerProvider
}

// resolved is a bizID's effective configuration.
type resolved struct {
	policy   Policy
	allow    []allowRule
	endpoint *checkback.Endpoint
	force    bool
	secret   []byte
	// secretSource is BizConfig.SecretSource.
	secretSource func() string
	// signV1 is BizConfig.SignV1.
	signV1 bool
	// weight, rate and burst are BizConfig's (weight at least 1).
	weight int
	rate   float64
	burst  int
}

// currentSecret is the bizID's signing secret now.
func (r *resolved) currentSecret() []byte {
	if r.secretSource != nil {
		if s := r.secretSource(); s != "" {
			return []byte(s)
		}
	}
	return r.secret
}

// DefaultConfig returns a Config holding the defaults New gives zero
// fields, but for the ones derived from fields the caller sets
// (BizWorkers: 3/4 of Workers; ClaimAhead: 2 × ClaimLimit), which stay 0
// for New to derive. The binary's configuration starts from it and sets
// what its settings say; Validate then refuses what a setting made zero.
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

// setFixedDefaults gives the zero fields whose default does not depend on
// a field the caller sets afterwards their default.
func (c *Config) setFixedDefaults() {
	p := &c.Policy
	def(&p.FirstDelay, DefaultFirstDelay)
	def(&p.BackoffBase, DefaultBackoffBase)
	def(&p.BackoffCap, DefaultBackoffCap)
	def(&p.MaxAttempts, DefaultMaxAttempts)
	def(&p.Timeout, DefaultTimeout)
	def(&c.Workers, DefaultWorkers)
	ec := DefaultEndpointConcurrency
	if c.Workers > 0 { // never more per endpoint than in all
		ec = min(ec, c.Workers)
	}
	def(&c.EndpointConcurrency, ec)
	def(&c.EndpointQueue, 64)
	def(&c.ClaimLimit, 1024)
	def(&c.Lease, DefaultLease)
	def(&c.PollInterval, time.Second)
	def(&c.BusyDelay, 100*time.Millisecond)
	def(&c.MaxPutOff, 30*time.Second)
	def(&c.BreakerFailures, DefaultBreakerFailures)
	def(&c.BreakerCoolDown, DefaultBreakerCoolDown)
	def(&c.ApplyBatch, 256)
	def(&c.ApplyInterval, 20*time.Millisecond)
	def(&c.Appliers, 4)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// deriveDefaults gives BizWorkers and ClaimAhead, when 0, their default
// from Workers and ClaimLimit.
func (c *Config) deriveDefaults() {
	if c.Workers > 0 {
		def(&c.BizWorkers, max(1, c.Workers-c.Workers/4))
	}
	def(&c.ClaimAhead, 2*c.ClaimLimit)
}

func def[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// merge returns p with b's non-zero fields on top.
func (p Policy) merge(b Policy) Policy {
	if b.FirstDelay != 0 {
		p.FirstDelay = b.FirstDelay
	}
	if b.BackoffBase != 0 {
		p.BackoffBase = b.BackoffBase
	}
	if b.BackoffCap != 0 {
		p.BackoffCap = b.BackoffCap
	}
	if b.MaxAttempts != 0 {
		p.MaxAttempts = b.MaxAttempts
	}
	if b.Timeout != 0 {
		p.Timeout = b.Timeout
	}
	if b.JitterSet {
		p.Jitter = b.Jitter
	}
	return p
}

// check records p's problems under field ("Policy", `BizIDs["a"]`). A
// partial policy (a bizID's) may leave a field 0 to inherit it; a whole
// one (Config.Policy after defaults) may not, but for FirstDelay (0:
// DefaultFirstDelay).
func (p Policy) check(check *fieldcheck.Checker, field string, partial bool) {
	positive := func(name string, d time.Duration) {
		if d < 0 || (!partial && d == 0) {
			check.Bad(field+"."+name, "must be positive, got %s", d)
		}
	}
	if p.FirstDelay < 0 {
		check.Bad(field+".FirstDelay", "must not be negative, got %s", p.FirstDelay)
	}
	positive("BackoffBase", p.BackoffBase)
	positive("BackoffCap", p.BackoffCap)
	positive("Timeout", p.Timeout)
	if p.MaxAttempts < 0 || (!partial && p.MaxAttempts == 0) {
		check.Bad(field+".MaxAttempts", "must be at least 1, got %d", p.MaxAttempts)
	}
	if p.Jitter > JitterNone {
		check.Bad(field+".Jitter", "unknown value %d", p.Jitter)
	}
}

// Validate checks a Config as New takes it, after its defaults
// (WithDefaults; DefaultConfig for the fields the caller sets): a field
// with a constant default must hold a valid value, 0 included; only the
// derived ones (see DefaultConfig) and Policy.FirstDelay may be 0. Its
// errors name the field (fieldcheck.Problems reads them back). It is the
// one home of these limits: app/config reports its problems under the
// settings' names rather than checking the fields again.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

// resolve validates c (defaults set) and builds every bizID's effective
// configuration; the "" entry is the one for bizIDs not listed.
func (c *Config) resolve() (map[string]*resolved, error) {
	check := fieldcheck.Checker{Prefix: "verifier config"}
	bad := check.Bad
	c.Policy.check(&check, "Policy", false)
	if c.Policy.BackoffBase > 0 && c.Policy.BackoffCap < c.Policy.BackoffBase {
		bad("Policy.BackoffCap", "must not be below Policy.BackoffBase (%s), got %s", c.Policy.BackoffBase, c.Policy.BackoffCap)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Workers", c.Workers}, {"EndpointConcurrency", c.EndpointConcurrency}, {"EndpointQueue", c.EndpointQueue},
		{"ClaimLimit", c.ClaimLimit}, {"BreakerFailures", c.BreakerFailures}, {"ApplyBatch", c.ApplyBatch}, {"Appliers", c.Appliers},
	} {
		if f.v < 1 {
			bad(f.name, "must be at least 1, got %d", f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"PollInterval", c.PollInterval}, {"BusyDelay", c.BusyDelay}, {"MaxPutOff", c.MaxPutOff}, {"BreakerCoolDown", c.BreakerCoolDown},
		{"ApplyInterval", c.ApplyInterval},
	} {
		if f.v <= 0 {
			bad(f.name, "must be positive, got %s", f.v)
		}
	}
	if c.ClaimAhead < 0 {
		bad("ClaimAhead", "must not be negative (0 means 2 × ClaimLimit), got %d", c.ClaimAhead)
	}
	if c.BizWorkers < 0 || (c.Workers > 0 && c.BizWorkers > c.Workers) {
		bad("BizWorkers", "must be 0 (3/4 of Workers) to Workers (%d), got %d", c.Workers, c.BizWorkers)
	}
	if c.MaxPutOff < c.BusyDelay {
		bad("MaxPutOff", "must not be below BusyDelay (%s), got %s", c.BusyDelay, c.MaxPutOff)
	}
	if c.EndpointConcurrency > c.Workers && c.Workers > 0 {
		bad("EndpointConcurrency", "must not exceed Workers (%d), got %d", c.Workers, c.EndpointConcurrency)
	}
	global := parseAllow(&check, "Allow", c.Allow)
	out := map[string]*resolved{"": {policy: c.Policy, allow: global, weight: 1}}
	maxTimeout, timeoutField := c.Policy.Timeout, "Policy.Timeout"
	ids := make([]string, 0, len(c.BizIDs))
	for id := range c.BizIDs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b := c.BizIDs[id]
		field := fmt.Sprintf("BizIDs[%q]", id)
		if id == "" || strings.Contains(id, ":") {
			bad(field, "a bizID is non-empty and has no ':'")
			continue
		}
		r := &resolved{policy: c.Policy.merge(b.Policy), force: b.ForceEndpoint}
		b.Policy.check(&check, field, true)
		if (b.BackoffBase != 0 || b.BackoffCap != 0) && r.policy.BackoffCap < r.policy.BackoffBase {
			bad(field+".BackoffCap", "%s is below %s.BackoffBase %s (unset values inherit Policy.BackoffBase and Policy.BackoffCap)", r.policy.BackoffCap, field, r.policy.BackoffBase)
		}
		if r.policy.Timeout > maxTimeout {
			maxTimeout, timeoutField = r.policy.Timeout, field+".Timeout"
		}
		r.allow = append(parseAllow(&check, field+".Allow", b.Allow), global...)
		if b.Endpoint != "" {
			ep, err := checkback.ParseEndpoint(b.Endpoint)
			if err != nil {
				bad(field+".Endpoint", "%v", err)
			} else {
				r.endpoint = &ep
			}
		} else if b.ForceEndpoint {
			bad(field+".ForceEndpoint", "is set without %s.Endpoint", field)
		}
		if b.Secret != "" {
			r.secret = []byte(b.Secret)
		}
		r.secretSource = b.SecretSource
		r.signV1 = b.SignV1
		r.setFairness(&check, field, b)
		out[id] = r
	}
	if c.Lease < 3*maxTimeout {
		bad("Lease", "must be at least 3 × %s (%s), got %s", timeoutField, 3*maxTimeout, c.Lease)
	}
	if err := check.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseAllow parses an allow list, recording the bad entries' problems
// under field[i].
func parseAllow(check *fieldcheck.Checker, field string, list []string) []allowRule {
	var rules []allowRule
	for i, s := range list {
		r, err := parseAllowRule(s)
		if err != nil {
			check.Bad(fmt.Sprintf("%s[%d]", field, i), "%q: %v", s, err)
			continue
		}
		rules = append(rules, r)
	}
	return rules
}

// FirstDelay returns the delay before a bizID's first check-back when the
// envelope gives none: its FirstDelay, else the default policy's. Ingest
// uses it for state.Body.CheckAfter.
func (c *Config) FirstDelay(bizID string) time.Duration {
	d := c.Policy.FirstDelay
	if b, ok := c.BizIDs[bizID]; ok && b.FirstDelay != 0 {
		d = b.FirstDelay
	}
	if d == 0 {
		d = DefaultFirstDelay
	}
	return d
}

// Backoff returns the delay after the n-th unknown answer (n ≥ 1):
// min(BackoffCap, BackoffBase·2^(n-1)), jittered with r in [0, 1).
func (p Policy) Backoff(n int, r float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := p.BackoffCap
	if shift := n - 1; shift < 62 {
		if f := float64(p.BackoffBase) * math.Pow(2, float64(shift)); f < float64(p.BackoffCap) {
			d = time.Duration(f)
		}
	}
	switch p.Jitter {
	case JitterFull:
		return time.Duration(r * float64(d))
	case JitterEqual:
		return d/2 + time.Duration(r*float64(d/2))
	default:
		return d
	}
}
