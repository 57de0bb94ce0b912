package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/caarlos0/env/v11"
	"gopkg.in/yaml.v3"

	"github.com/eventcenter/eventcenter/app/retention"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/verifier"
)

// Config is the whole configuration file.
type Config struct {
	Kafka     Kafka     `yaml:"kafka"`
	Store     Store     `yaml:"store"`
	HTTP      HTTP      `yaml:"http"`
	Admin     Admin     `yaml:"admin"`
	Ingest    Ingest    `yaml:"ingest"`
	Forward   Forward   `yaml:"forward"`
	Checkback Checkback `yaml:"checkback"`
	Retention Retention `yaml:"retention"`
	Log       Log       `yaml:"log"`
	// Ingress is the producer HTTP API (ingress.go).
	Ingress Ingress `yaml:"ingress"`

	// source maps the YAML path of each field ApplyEnv or a flag set to
	// the variable or flag, so that Validate names where the value came
	// from.
	source map[string]string
}

// Default returns the built-in defaults. What a component also defaults
// comes from the component's own Default* constants (ingest, forwarder,
// verifier, retention), the one home of each value: a zero field passed to
// the component and the binary's default are the same by construction. What
// only the binary has (Kafka session, store, HTTP, log) is defaulted here.
func Default() Config {
	return Config{
		Kafka: Kafka{Brokers: []string{"127.0.0.1:9092"}, ControlTopic: ingest.DefaultControlTopic, Group: ingest.DefaultGroup,
			ClientID: "eventcenter", SessionTimeout: 45 * time.Second, ControlPartitions: 8},
		Store: Store{Driver: "postgres", MaxConns: 8},
		HTTP: HTTP{Listen: "127.0.0.1:8080", ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute,
			IdleTimeout: 2 * time.Minute, MaxConcurrent: 64},
		Ingest: Ingest{MaxPayloadBytes: ingest.DefaultMaxPayload, SendLease: forwarder.DefaultLease,
			Parallelism: ingest.DefaultParallelism, MinApplyRecords: ingest.DefaultMinApply,
			FreshFetchWait: ingest.DefaultFreshFetchWait},
		Forward: Forward{
			DefaultTarget: "kafka", MaxAttempts: forwarder.DefaultMaxAttempts,
			BackoffBase: forwarder.DefaultBackoffBase, BackoffCap: forwarder.DefaultBackoffCap,
			ScanInterval: forwarder.DefaultScanInterval, Lease: forwarder.DefaultLease, SendTimeout: forwarder.DefaultSendTimeout,
			InlineTimeout: forwarder.DefaultInlineTimeout, MaxDelay: ingest.DefaultMaxDelay,
			Targets:    []Target{{Name: "kafka", Type: "kafka"}},
			Order:      Order{Dead: "hold"},
			FairClaims: true,
		},
		Checkback: Checkback{
			Policy: Policy{FirstDelay: verifier.DefaultFirstDelay, BackoffBase: verifier.DefaultBackoffBase,
				BackoffCap: verifier.DefaultBackoffCap, MaxAttempts: verifier.DefaultMaxAttempts, Timeout: verifier.DefaultTimeout},
			Workers: verifier.DefaultWorkers, EndpointConcurrency: verifier.DefaultEndpointConcurrency, Lease: verifier.DefaultLease,
			Breaker: Breaker{Failures: verifier.DefaultBreakerFailures, Cooldown: verifier.DefaultBreakerCoolDown},
		},
		Retention: Retention{Period: retention.DefaultPeriod, Interval: retention.DefaultInterval, Batch: retention.DefaultBatch, AuditPeriod: DefaultAuditPeriod},
		Log:       Log{Level: "info", Format: "text"},
		Ingress:   defaultIngress(),
	}
}

// Load reads defaults, then the YAML file (if path is not empty), then the
// environment, and validates the result.
func Load(path string) (Config, error) {
	cfg := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		if err := Parse(data, &cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := ApplyEnv(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.ResolveSecrets(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// Parse decodes YAML over cfg; unknown keys are errors.
func Parse(data []byte, cfg *Config) error {
	// Targets given in the file replace the default list rather than
	// merging into it element by element.
	var probe struct {
		Forward struct {
			Targets []Target `yaml:"targets"`
		} `yaml:"forward"`
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("parse yaml: %w", err)
	}
	// Unknown keys and values of the wrong kind, named by YAML path (the
	// decoder's own messages name Go types).
	if err := checkYAML(&doc); err != nil {
		return err
	}
	_ = yaml.Unmarshal(data, &probe)
	if probe.Forward.Targets != nil {
		cfg.Forward.Targets = nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("parse yaml: %w", err)
	}
	return nil
}

// ApplyEnv overrides cfg with the EVENTCENTER_* variables that are set.
func ApplyEnv(cfg *Config) error {
	// One variable at a time, so an error names the variable (the
	// library's own errors name the Go field and type).
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	var errs []error
	for _, p := range params {
		v, ok := os.LookupEnv(p.Key)
		if !ok || v == "" {
			continue
		}
		if err := env.ParseWithOptions(cfg, env.Options{Environment: map[string]string{p.Key: v}}); err != nil {
			errs = append(errs, fmt.Errorf("environment: %s: %s", p.Key, envProblem(err, v)))
			continue
		}
		if path, ok := envPaths()[p.Key]; ok {
			cfg.setSource(path, p.Key)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	applySecretEnv(cfg)
	if cfg.Admin.TokensEnv != "" {
		for i, part := range strings.Split(cfg.Admin.TokensEnv, ",") {
			name, rest, ok1 := strings.Cut(strings.TrimSpace(part), ":")
			scope, tok, ok2 := strings.Cut(rest, ":")
			if !ok1 || !ok2 {
				// The entry holds a secret: say where, not what.
				return fmt.Errorf("environment: EVENTCENTER_ADMIN_TOKENS: entry %d is not name:scope:token (want name:scope:token[,...])", i+1)
			}
			cfg.Admin.Tokens = append(cfg.Admin.Tokens, Token{Name: name, Scope: scope, Token: tok})
		}
	}
	return nil
}

// SetByFlag records that the field at the YAML path was set by the
// command-line flag (e.g. "--http-listen"), over what the file or the
// environment said: Validate names the flag for it.
func (c *Config) SetByFlag(path, flag string) { c.setSource(path, flag) }

func (c *Config) setSource(path, from string) {
	if c.source == nil {
		c.source = map[string]string{}
	}
	c.source[path] = from
}

// envPaths maps each EVENTCENTER_* variable to the YAML path of its field.
var envPaths = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			path := prefix
			switch {
			case name == "-":
				path = ""
			case opts == "inline":
			case name != "":
				path = strings.TrimPrefix(prefix+"."+name, ".")
			default:
				path = strings.TrimPrefix(prefix+"."+strings.ToLower(f.Name), ".")
			}
			if key, _, _ := strings.Cut(f.Tag.Get("env"), ","); key != "" && path != "" {
				m[key] = path
			}
			if f.Type.Kind() == reflect.Struct && path != "" || opts == "inline" {
				walk(f.Type, path)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return m
})

// envProblem says what is wrong with the value v of a variable, in terms
// of what it should be.
func envProblem(err error, v string) string {
	var pe env.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("want %s, got %q", want(pe.Type), v)
	}
	return fmt.Sprintf("cannot use %q", v)
}

// Validate checks every field and names the bad ones.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		if from, ok := c.source[field]; ok {
			field += " (from " + from + ")"
		}
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	c.validateKafka(bad)
	c.validateStore(bad)
	c.validateHTTP(bad)
	c.validateAdmin(bad)
	c.validateIngest(bad)
	c.validateForward(bad)
	c.validateFair(bad)
	c.validateLanes(bad)
	c.validateCheckback(bad)
	c.validateSecurity(bad)
	c.validateIngress(bad)
	c.validateRetention(bad)
	c.validateLog(bad)
	return errors.Join(errs...)
}
