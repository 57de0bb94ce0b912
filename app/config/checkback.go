package config

import (
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/verifier"
)

// Checkback configures check-backs.
type Checkback struct {
	Policy              `yaml:",inline"`
	Workers             int `yaml:"workers" env:"EVENTCENTER_CHECKBACK_WORKERS"`
	EndpointConcurrency int `yaml:"endpoint_concurrency" env:"EVENTCENTER_CHECKBACK_ENDPOINT_CONCURRENCY"`
	// BizWorkers bounds the calls one bizID may have running (0: 3/4 of
	// workers), so one bizID's slow endpoints never hold every worker.
	BizWorkers int     `yaml:"biz_workers" env:"EVENTCENTER_CHECKBACK_BIZ_WORKERS"`
	Breaker    Breaker `yaml:"breaker"`
	// Lease is how long claimed check-backs stay claimed; a call lost with
	// a crashed instance is retried by another after it. It must be at
	// least 3 × the longest timeout.
	Lease time.Duration `yaml:"lease" env:"EVENTCENTER_CHECKBACK_LEASE"`
	// Allow lists check-back endpoints allowed for every bizID: exact
	// origins (http://10.0.0.1:8080) or URL prefixes; a registry
	// (zookeeper://zk1:2181) lets PREPAREs name a Dubbo service there,
	// whose providers must be allowed too. Nothing else is called.
	Allow []string `yaml:"allow" env:"EVENTCENTER_CHECKBACK_ALLOW" envSeparator:","`
	Biz   []Biz    `yaml:"biz"`
}

// Policy is the check-back timing; zero fields inherit.
type Policy struct {
	FirstDelay  time.Duration `yaml:"first_delay" env:"EVENTCENTER_CHECKBACK_FIRST_DELAY"`
	BackoffBase time.Duration `yaml:"backoff_base" env:"EVENTCENTER_CHECKBACK_BACKOFF_BASE"`
	BackoffCap  time.Duration `yaml:"backoff_cap" env:"EVENTCENTER_CHECKBACK_BACKOFF_CAP"`
	MaxAttempts int           `yaml:"max_attempts" env:"EVENTCENTER_CHECKBACK_MAX_ATTEMPTS"`
	Timeout     time.Duration `yaml:"timeout" env:"EVENTCENTER_CHECKBACK_TIMEOUT"`
}

// Breaker pauses an endpoint that keeps failing: it opens when calls for
// Failures distinct message keys fail in a row (no answer in time, a
// transport error, HTTP 5xx or 429; answers given for one key, however bad,
// never count) and lets one probe through after Cooldown.
type Breaker struct {
	Failures int           `yaml:"failures"`
	Cooldown time.Duration `yaml:"cooldown"`
}

// Biz is the check-back configuration of one bizID.
type Biz struct {
	BizID  string `yaml:"biz_id"`
	Policy `yaml:",inline"`
	// Endpoint is used when the envelope names none; with force_endpoint
	// it is always used.
	Endpoint      string   `yaml:"endpoint"`
	ForceEndpoint bool     `yaml:"force_endpoint"`
	Allow         []string `yaml:"allow"`
	// Secret signs check-back requests (HMAC-SHA256).
	Secret string `yaml:"secret"`
	// SecretFile holds the secret instead of Secret; SecretEnv names an
	// environment variable that does (see security.go).
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
	// SignV1 adds the legacy v1 signature next to v2 for producers not yet
	// upgraded (verifier.BizConfig.SignV1); for the transition only.
	SignV1 bool `yaml:"sign_v1"`
	// Weight is the bizID's share of check-back claims and workers
	// against the others (0: 1).
	Weight int `yaml:"weight"`
	// Rate bounds the bizID's check-back calls per second (0: none), a
	// token bucket of Burst (0: the rate rounded up). Over it check-backs
	// wait; no attempt is spent.
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
}

// verifierPaths are the settings behind verifier.Config's fields; those
// of each checkback.biz[] entry are added by (*Config).verifierPaths.
var verifierPaths = fieldPaths{
	"Policy.FirstDelay":   "checkback.first_delay",
	"Policy.BackoffBase":  "checkback.backoff_base",
	"Policy.BackoffCap":   "checkback.backoff_cap",
	"Policy.MaxAttempts":  "checkback.max_attempts",
	"Policy.Timeout":      "checkback.timeout",
	"Allow":               "checkback.allow",
	"Workers":             "checkback.workers",
	"EndpointConcurrency": "checkback.endpoint_concurrency",
	"BizWorkers":          "checkback.biz_workers",
	"Lease":               "checkback.lease",
	"BreakerFailures":     "checkback.breaker.failures",
	"BreakerCoolDown":     "checkback.breaker.cooldown",
}

// bizSettings are the settings of a checkback.biz[] entry behind a
// verifier.BizConfig's fields.
var bizSettings = map[string]string{
	"FirstDelay": "first_delay", "BackoffBase": "backoff_base", "BackoffCap": "backoff_cap", "MaxAttempts": "max_attempts",
	"Timeout": "timeout", "Allow": "allow", "Endpoint": "endpoint", "ForceEndpoint": "force_endpoint",
	"Weight": "weight", "Rate": "rate", "Burst": "burst",
}

// verifierPaths is verifierPaths with the fields of every checkback.biz[]
// entry (BizIDs["a"].Timeout is checkback.biz[i].timeout).
func (c *Config) verifierPaths() fieldPaths {
	ids := make([]string, len(c.Checkback.Biz))
	for i, b := range c.Checkback.Biz {
		ids[i] = b.BizID
	}
	return verifierPaths.withEntries("BizIDs", "checkback.biz", ids, bizSettings)
}

// VerifierConfig is the verifier.Config the settings make
// (verifierPaths): the verifier's defaults, then checkback.*. What is not
// a setting (the transport, secret sources, resolver, callbacks, the
// clock, the logger) the center adds.
func (c *Config) VerifierConfig() verifier.Config {
	cb := c.Checkback
	policy := func(p Policy) verifier.Policy {
		return verifier.Policy{FirstDelay: p.FirstDelay, BackoffBase: p.BackoffBase, BackoffCap: p.BackoffCap, MaxAttempts: p.MaxAttempts, Timeout: p.Timeout}
	}
	vc := verifier.DefaultConfig()
	vc.Policy = policy(cb.Policy)
	vc.Allow = cb.Allow
	vc.Workers = cb.Workers
	vc.EndpointConcurrency = cb.EndpointConcurrency
	vc.BizWorkers = cb.BizWorkers
	vc.Lease = cb.Lease
	vc.BreakerFailures = cb.Breaker.Failures
	vc.BreakerCoolDown = cb.Breaker.Cooldown
	vc.BizIDs = make(map[string]verifier.BizConfig, len(cb.Biz))
	for _, b := range cb.Biz {
		vc.BizIDs[b.BizID] = verifier.BizConfig{Policy: policy(b.Policy), Allow: b.Allow, Endpoint: b.Endpoint, ForceEndpoint: b.ForceEndpoint,
			Secret: b.Secret, SignV1: b.SignV1, Weight: b.Weight, Rate: b.Rate, Burst: b.Burst}
	}
	return vc
}

// validateCheckback checks checkback: verifier.Config.Validate's limits
// under the settings' names, and what only the list of entries has.
func (c *Config) validateCheckback(bad func(string, string, ...any)) {
	vc := c.VerifierConfig()
	c.verifierPaths().report("checkback", vc.Validate(), bad)
	seen := map[string]bool{}
	for i, b := range c.Checkback.Biz {
		if seen[b.BizID] {
			bad(fmt.Sprintf("checkback.biz[%d].biz_id", i), "duplicate bizID %q", b.BizID)
		}
		seen[b.BizID] = true
	}
}
