package config

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/envelope/checkback"
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

func (c *Config) validateCheckback(bad func(string, string, ...any)) {
	cb := c.Checkback
	validatePolicy("checkback", cb.Policy, false, bad)
	if cb.Workers < 1 {
		bad("checkback.workers", "must be at least 1")
	}
	if cb.BackoffCap < cb.BackoffBase {
		bad("checkback.backoff_cap", "must not be below checkback.backoff_base (%s)", cb.BackoffBase)
	}
	// The lease covers the longest timeout of any bizID.
	timeout, timeoutField := cb.Timeout, "checkback.timeout"
	for i, b := range cb.Biz {
		if b.Timeout > timeout {
			timeout, timeoutField = b.Timeout, fmt.Sprintf("checkback.biz[%d].timeout", i)
		}
	}
	if cb.Lease < 3*timeout {
		bad("checkback.lease", "must be at least 3 × %s (%s)", timeoutField, 3*timeout)
	}
	if cb.EndpointConcurrency < 1 {
		bad("checkback.endpoint_concurrency", "must be at least 1")
	}
	if cb.Workers >= 1 && cb.EndpointConcurrency > cb.Workers {
		bad("checkback.endpoint_concurrency", "%d exceeds checkback.workers (%d)", cb.EndpointConcurrency, cb.Workers)
	}
	checkAllow("checkback.allow", cb.Allow, bad)
	if cb.BizWorkers < 0 || (cb.Workers > 0 && cb.BizWorkers > cb.Workers) {
		bad("checkback.biz_workers", "must be between 0 (3/4 of workers) and checkback.workers (%d)", cb.Workers)
	}
	if cb.Breaker.Failures < 1 || cb.Breaker.Cooldown <= 0 {
		bad("checkback.breaker", "failures must be at least 1 and cooldown positive")
	}
	seen := map[string]bool{}
	for i, b := range cb.Biz {
		field := fmt.Sprintf("checkback.biz[%d]", i)
		if b.BizID == "" || strings.Contains(b.BizID, ":") {
			bad(field+".biz_id", "is required and must not contain ':'")
		}
		if seen[b.BizID] {
			bad(field+".biz_id", "duplicate bizID %q", b.BizID)
		}
		seen[b.BizID] = true
		validatePolicy(field, b.Policy, true, bad)
		base, capped := cmp.Or(b.BackoffBase, cb.BackoffBase), cmp.Or(b.BackoffCap, cb.BackoffCap)
		if (b.BackoffBase != 0 || b.BackoffCap != 0) && capped < base {
			bad(field+".backoff_cap", "%s is below the bizID's backoff_base %s (unset values inherit checkback's)", capped, base)
		}
		checkAllow(field+".allow", b.Allow, bad)
		validateBizFairness(field, b, bad)
		if b.Endpoint != "" {
			if _, err := checkback.ParseEndpoint(b.Endpoint); err != nil {
				bad(field+".endpoint", "%v", err)
			}
		} else if b.ForceEndpoint {
			bad(field+".force_endpoint", "is set without an endpoint")
		}
	}
}

// checkAllow checks the entries of a check-back allow list.
func checkAllow(field string, list []string, bad func(string, string, ...any)) {
	for i, s := range list {
		if err := verifier.CheckAllowEntry(s); err != nil {
			bad(fmt.Sprintf("%s[%d]", field, i), "%q: %v", s, err)
		}
	}
}

func validatePolicy(field string, p Policy, partial bool, bad func(string, string, ...any)) {
	check := func(name string, d time.Duration) {
		if d < 0 || (!partial && d == 0) {
			bad(field+"."+name, "must be positive")
		}
	}
	check("backoff_base", p.BackoffBase)
	check("backoff_cap", p.BackoffCap)
	check("timeout", p.Timeout)
	if p.FirstDelay < 0 {
		bad(field+".first_delay", "must not be negative")
	}
	if p.MaxAttempts < 0 || (!partial && p.MaxAttempts == 0) {
		bad(field+".max_attempts", "must be at least 1")
	}
}
