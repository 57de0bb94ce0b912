package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
)

// DefaultAuditPeriod is how long audit records are kept by default: a year,
// whatever the messages' own retention.
const DefaultAuditPeriod = 365 * 24 * time.Hour

// StoreSecrets is the database password kept out of store.dsn: from
// EVENTCENTER_STORE_PASSWORD or a file (store.password_file,
// EVENTCENTER_STORE_PASSWORD_FILE) read for every new connection, so that a
// rotated password is used without a restart. It replaces the DSN's.
type StoreSecrets struct {
	Password     string `yaml:"-" env:"EVENTCENTER_STORE_PASSWORD"`
	PasswordFile string `yaml:"password_file" env:"EVENTCENTER_STORE_PASSWORD_FILE"`
}

// RocketMQACL is a RocketMQ target's ACL credentials: access_key, and
// secret_key, secret_key_file or secret_key_env (the name of an
// environment variable holding it).
type RocketMQACL struct {
	AccessKey     string `yaml:"access_key"`
	SecretKey     string `yaml:"secret_key"`
	SecretKeyFile string `yaml:"secret_key_file"`
	SecretKeyEnv  string `yaml:"secret_key_env"`
}

// Secret-bearing environment variables without a field of their own: the
// control cluster's SASL credentials.
const (
	EnvKafkaSASLMechanism = "EVENTCENTER_KAFKA_SASL_MECHANISM"
	EnvKafkaSASLUsername  = "EVENTCENTER_KAFKA_SASL_USERNAME"
	EnvKafkaSASLPassword  = "EVENTCENTER_KAFKA_SASL_PASSWORD"
)

// applySecretEnv applies the variables above.
func applySecretEnv(cfg *Config) {
	s := &cfg.Kafka.Auth.SASL
	if v := os.Getenv(EnvKafkaSASLMechanism); v != "" {
		s.Mechanism = v
	}
	if v := os.Getenv(EnvKafkaSASLUsername); v != "" {
		s.Username = v
	}
	if v := os.Getenv(EnvKafkaSASLPassword); v != "" {
		s.Password, s.PasswordFile = v, ""
	}
}

// ReadSecretFile reads a secret from a file, without trailing newlines. Its
// errors name the file, never the content.
func ReadSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// ResolveSecrets reads the secrets given as files into their fields: admin
// and producer tokens (token_file), check-back secrets (secret_file) and RocketMQ secret
// keys (secret_key_file); the file names stay, for the center to re-read
// them when they change. Kafka and store passwords are read at each
// connection instead. Errors name the key and the file only.
func (c *Config) ResolveSecrets() error {
	var errs []error
	read := func(field, path string, into *string) {
		if path == "" {
			return
		}
		v, err := ReadSecretFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			return
		}
		// A second resolution finds the file's own value.
		if *into != "" && *into != v {
			errs = append(errs, fmt.Errorf("%s: give the secret or its file, not both", field))
			return
		}
		*into = v
	}
	fromEnv := func(field, name string, into *string) {
		if name == "" {
			return
		}
		v := os.Getenv(name)
		switch {
		case v == "":
			errs = append(errs, fmt.Errorf("%s: environment variable %s is not set", field, name))
		case *into != "" && *into != v:
			errs = append(errs, fmt.Errorf("%s: give the secret, its file or its variable, not two", field))
		default:
			*into = v
		}
	}
	for i := range c.Checkback.Biz {
		b := &c.Checkback.Biz[i]
		fromEnv(fmt.Sprintf("checkback.biz[%d].secret_env", i), b.SecretEnv, &b.Secret)
	}
	for i := range c.Forward.Targets {
		a := &c.Forward.Targets[i].ACL
		fromEnv(fmt.Sprintf("forward.targets[%d].secret_key_env", i), a.SecretKeyEnv, &a.SecretKey)
	}
	for i := range c.Admin.Tokens {
		t := &c.Admin.Tokens[i]
		read(fmt.Sprintf("admin.tokens[%d].token_file", i), t.TokenFile, &t.Token)
	}
	for i := range c.Checkback.Biz {
		b := &c.Checkback.Biz[i]
		read(fmt.Sprintf("checkback.biz[%d].secret_file", i), b.SecretFile, &b.Secret)
	}
	c.resolveIngressSecrets(read)
	for i := range c.Forward.Targets {
		a := &c.Forward.Targets[i].ACL
		read(fmt.Sprintf("forward.targets[%d].secret_key_file", i), a.SecretKeyFile, &a.SecretKey)
	}
	if c.Store.PasswordFile != "" {
		if _, err := ReadSecretFile(c.Store.PasswordFile); err != nil {
			errs = append(errs, fmt.Errorf("store.password_file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// StorePassword is the store password: store.password_file's content (read
// now), EVENTCENTER_STORE_PASSWORD, or "" to keep the DSN's.
func (s Store) StorePassword() (string, error) {
	if s.PasswordFile != "" {
		v, err := ReadSecretFile(s.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("store.password_file: %w", err)
		}
		return v, nil
	}
	return s.Password, nil
}

// TargetAuth is the TLS and SASL of a Kafka target: its own when it sets
// any, otherwise kafka's when it uses kafka.brokers.
func (c *Config) TargetAuth(t Target) kafkaauth.Config {
	if !t.Auth.IsZero() || len(t.Brokers) > 0 {
		return t.Auth
	}
	return c.Kafka.Auth
}

// validateSecurity checks the TLS, SASL and ACL blocks and the audit
// retention.
func (c *Config) validateSecurity(bad func(string, string, ...any)) {
	prefixed := func(prefix string, err error) {
		for _, e := range splitJoined(err) {
			field, msg, _ := strings.Cut(e.Error(), ": ")
			bad(prefix+"."+field, "%s", msg)
		}
	}
	prefixed("kafka", c.Kafka.Auth.Validate())
	for i, t := range c.Forward.Targets {
		field := fmt.Sprintf("forward.targets[%d]", i)
		switch t.Type {
		case "kafka":
			prefixed(field, t.Auth.Validate())
			if t.ACL != (RocketMQACL{}) {
				bad(field+".access_key", "is for rocketmq targets")
			}
		case "rocketmq":
			if !t.Auth.IsZero() {
				bad(field+".tls", "tls and sasl are for kafka targets (rocketmq: access_key, secret_key)")
			}
			if (t.ACL.AccessKey == "") != (t.ACL.SecretKey == "" && t.ACL.SecretKeyFile == "" && t.ACL.SecretKeyEnv == "") {
				bad(field+".access_key", "access_key and secret_key (or secret_key_file) go together")
			}
		}
	}
	if c.Store.Driver != "postgres" && (c.Store.Password != "" || c.Store.PasswordFile != "") {
		bad("store.password_file", "is supported for the postgres driver only (MySQL: put the password in store.dsn)")
	}
	if c.Store.Driver == "postgres" && (c.Store.Password != "" || c.Store.PasswordFile != "") {
		if u, err := url.Parse(c.Store.DSN); err == nil && u.User != nil && u.User.Username() == "" {
			bad("store.dsn", "names no user for store.password_file")
		}
	}
	if c.Retention.AuditPeriod < 0 {
		bad("retention.audit_period", "must not be negative (0 keeps audit records forever)")
	}
}

// splitJoined undoes errors.Join, so that each problem gets its own line.
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
