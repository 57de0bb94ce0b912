// Package kafkaauth builds the franz-go options that connect to an
// authenticated, encrypted Kafka cluster: TLS (a CA, a client certificate,
// the server name, the lowest version) and SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512, OAUTHBEARER). The center builds every client it makes (the
// control consumer, the dead-letter writer and reader, each Kafka forward
// target) with it, and producers can too (clientlib.WithKafkaAuth).
//
// Secrets are read from files when the connection authenticates, not once:
// a rotated password file, token file or client certificate is used by the
// next connection without a restart.
package kafkaauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config says how to connect to one Kafka cluster. The zero value is a
// plaintext, unauthenticated connection.
type Config struct {
	TLS  TLS  `yaml:"tls"`
	SASL SASL `yaml:"sasl"`
}

// TLS configures the connection's encryption.
type TLS struct {
	// Enabled turns TLS on; the other fields imply it.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates
	// (empty: the system's roots).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's PEM certificate and key (mutual
	// TLS); both or neither. They are read on every handshake.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the brokers' certificates must carry (empty:
	// the host of the broker address).
	ServerName string `yaml:"server_name"`
	// MinVersion is "1.2" (default) or "1.3".
	MinVersion string `yaml:"min_version"`
}

// SASL configures authentication.
type SASL struct {
	// Mechanism is "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512" or
	// "OAUTHBEARER".
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password, or PasswordFile (read on every authentication; trailing
	// newlines are ignored). Never logged.
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	// PasswordEnv names an environment variable holding the password,
	// read at each authentication too.
	PasswordEnv string `yaml:"password_env"`
	// TokenFile holds the OAUTHBEARER token, read on every authentication
	// so that whatever refreshes the file refreshes the center's token.
	TokenFile string `yaml:"token_file"`
}

// On reports whether t asks for TLS.
func (t TLS) On() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.MinVersion != ""
}

// IsZero reports whether c is a plaintext, unauthenticated connection.
func (c Config) IsZero() bool { return !c.TLS.On() && c.SASL.Mechanism == "" }

// Validate checks c without reading any file; field names are relative
// (tls.ca_file, sasl.password...).
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file", "cert_file and key_file go together")
	}
	if _, err := minVersion(c.TLS.MinVersion); err != nil {
		bad("tls.min_version", "%v", err)
	}
	s := c.SASL
	switch strings.ToUpper(s.Mechanism) {
	case "":
		if s.Username != "" || s.Password != "" || s.PasswordFile != "" || s.PasswordEnv != "" || s.TokenFile != "" {
			bad("sasl.mechanism", "is required when sasl credentials are given (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if s.Username == "" {
			bad("sasl.username", "is required for %s", s.Mechanism)
		}
		if n := btoi(s.Password != "") + btoi(s.PasswordFile != "") + btoi(s.PasswordEnv != ""); n != 1 {
			bad("sasl.password", "give exactly one of password, password_file and password_env for %s", s.Mechanism)
		}
		if s.TokenFile != "" {
			bad("sasl.token_file", "is for OAUTHBEARER only")
		}
	case "OAUTHBEARER":
		if s.TokenFile == "" {
			bad("sasl.token_file", "is required for OAUTHBEARER")
		}
		if s.Password != "" || s.PasswordFile != "" || s.PasswordEnv != "" {
			bad("sasl.password", "is not used by OAUTHBEARER (use token_file)")
		}
	default:
		bad("sasl.mechanism", "want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, got %q", s.Mechanism)
	}
	return errors.Join(errs...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func minVersion(v string) (uint16, error) {
	switch v {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("want 1.2 or 1.3, got %q", v)
}

// TLSConfig builds the client TLS configuration of t; nil when TLS is off.
// The CA file is read now; the client certificate on every handshake.
func (t TLS) TLSConfig() (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	v, err := minVersion(t.MinVersion)
	if err != nil {
		return nil, fmt.Errorf("tls.min_version: %w", err)
	}
	cfg := &tls.Config{MinVersion: v, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		// Load once now so that a bad pair fails at start-up, then on
		// every handshake so that a renewed certificate is picked up.
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		certFile, keyFile := t.CertFile, t.KeyFile
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("load client certificate: %w", err)
			}
			return &c, nil
		}
	}
	return cfg, nil
}

// readSecret reads a secret file without its trailing newline.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Build makes the SASL mechanism of s; nil when SASL is off.
func (s SASL) Build() (sasl.Mechanism, error) {
	password := func() (string, error) {
		if s.PasswordEnv != "" {
			if v := os.Getenv(s.PasswordEnv); v != "" {
				return v, nil
			}
			return "", fmt.Errorf("sasl.password_env: environment variable %s is not set", s.PasswordEnv)
		}
		if s.PasswordFile == "" {
			return s.Password, nil
		}
		p, err := readSecret(s.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("sasl.password_file: %w", err)
		}
		return p, nil
	}
	// A missing file or variable is a start-up error, not a retried
	// connection error.
	if s.PasswordFile != "" || s.PasswordEnv != "" {
		if _, err := password(); err != nil {
			return nil, err
		}
	}
	if s.TokenFile != "" {
		if _, err := readSecret(s.TokenFile); err != nil {
			return nil, fmt.Errorf("sasl.token_file: %w", err)
		}
	}
	user := s.Username
	scramAuth := func(context.Context) (scram.Auth, error) {
		p, err := password()
		return scram.Auth{User: user, Pass: p}, err
	}
	switch strings.ToUpper(s.Mechanism) {
	case "":
		return nil, nil
	case "PLAIN":
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			p, err := password()
			return plain.Auth{User: user, Pass: p}, err
		}), nil
	case "SCRAM-SHA-256":
		return scram.Sha256(scramAuth), nil
	case "SCRAM-SHA-512":
		return scram.Sha512(scramAuth), nil
	case "OAUTHBEARER":
		file := s.TokenFile
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			tok, err := readSecret(file)
			if err != nil {
				return oauth.Auth{}, fmt.Errorf("sasl.token_file: %w", err)
			}
			if tok == "" {
				return oauth.Auth{}, fmt.Errorf("sasl.token_file %s is empty", file)
			}
			return oauth.Auth{Token: tok}, nil
		}), nil
	}
	return nil, fmt.Errorf("sasl.mechanism: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, got %q", s.Mechanism)
}

// Options returns the franz-go options of c (none for the zero Config).
func (c Config) Options() ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	tc, err := c.TLS.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	m, err := c.SASL.Build()
	if err != nil {
		return nil, err
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// ErrUnreachable marks a Check that could not reach any broker: Kafka may
// be down, which a center rides out, unlike a refused handshake.
var ErrUnreachable = errors.New("no broker reachable")

// Check connects to brokers with c (and extra options) and asks for
// metadata, within timeout. It returns nil on success; an error wrapping
// ErrUnreachable when no broker accepted a TCP connection; otherwise an
// error saying why the brokers refused the client: a TLS failure ("x509:
// certificate signed by unknown authority", "tls: expired certificate"), a
// TLS listener reached without TLS or the reverse, or a refused SASL login.
// Secrets never appear in the error.
func (c Config) Check(ctx context.Context, brokers []string, timeout time.Duration, extra ...kgo.Opt) error {
	opts, err := c.Options()
	if err != nil {
		return err
	}
	opts = append(append(opts, kgo.SeedBrokers(brokers...), kgo.DialTimeout(timeout)), extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = cl.Ping(pctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	var op *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial" || pctx.Err() != nil {
		// A TLS client to a plaintext listener times out in the
		// handshake: the TCP connection itself succeeds.
		if c.TLS.On() && tcpReachable(ctx, brokers, timeout) {
			return fmt.Errorf("a broker accepted the TCP connection but no TLS handshake within %s: is it a plaintext listener (remove tls)? %w", timeout, err)
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if errors.Is(err, io.EOF) && err.Error() == io.EOF.Error() && c.SASL.Mechanism != "" {
		return fmt.Errorf("the broker closed the connection during authentication: are sasl.mechanism %s, the username and the password right? %w", strings.ToUpper(c.SASL.Mechanism), err)
	}
	return err
}

// tcpReachable reports whether some broker accepts a TCP connection.
func tcpReachable(ctx context.Context, brokers []string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	for _, b := range brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			_ = conn.Close()
			return true
		}
	}
	return false
}
