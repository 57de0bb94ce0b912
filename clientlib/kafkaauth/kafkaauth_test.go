package kafkaauth_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth/kafkaauthtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const canary = "CANARY-s3cr3t-9f8e7d"

// check runs kafkaauth.Check against brokers with cfg, bounded well below
// the test timeout.
func check(t *testing.T, brokers []string, cfg kafkaauth.Config) error {
	t.Helper()
	start := time.Now()
	err := cfg.Check(t.Context(), brokers, 3*time.Second)
	require.Less(t, time.Since(start), 5*time.Second, "the check is bounded")
	if err != nil {
		require.NotContains(t, err.Error(), canary, "no secret in errors")
	}
	return err
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(p, []byte(content+"\n"), 0o600))
	return p
}

// TestTLSAndSASL runs each mechanism against a kfake cluster with mutual
// TLS and SASL, and each misconfiguration to a clear, bounded error.
func TestTLSAndSASL(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(p.ServerTLS(true)), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "plainuser", canary),
		kfake.Superuser("SCRAM-SHA-256", "scram256", canary),
		kfake.Superuser("SCRAM-SHA-512", "scram512", canary))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	cert, key := p.ClientFiles(t, time.Now().Add(time.Hour))
	good := kafkaauth.TLS{CAFile: p.CAFile, CertFile: cert, KeyFile: key, ServerName: "localhost", MinVersion: "1.2"}
	pwFile := writeFile(t, canary)

	for _, mech := range []struct{ name, user string }{{"PLAIN", "plainuser"}, {"SCRAM-SHA-256", "scram256"}, {"SCRAM-SHA-512", "scram512"}} {
		t.Run(mech.name, func(t *testing.T) {
			require.NoError(t, check(t, brokers, kafkaauth.Config{TLS: good, SASL: kafkaauth.SASL{Mechanism: mech.name, Username: mech.user, Password: canary}}))
			require.NoError(t, check(t, brokers, kafkaauth.Config{TLS: good, SASL: kafkaauth.SASL{Mechanism: mech.name, Username: mech.user, PasswordFile: pwFile}}))
			err := check(t, brokers, kafkaauth.Config{TLS: good, SASL: kafkaauth.SASL{Mechanism: mech.name, Username: mech.user, Password: "wrong-" + canary}})
			require.Error(t, err)
			require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
			require.Contains(t, err.Error(), "sasl.mechanism")
		})
	}
	t.Run("expired client certificate", func(t *testing.T) {
		cert, key := p.ClientFiles(t, time.Now().Add(-time.Minute))
		bad := good
		bad.CertFile, bad.KeyFile = cert, key
		err := check(t, brokers, kafkaauth.Config{TLS: bad, SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "plainuser", Password: canary}})
		require.Error(t, err)
		require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
		t.Log(err)
	})
	t.Run("unknown CA", func(t *testing.T) {
		other := kafkaauthtest.New(t)
		bad := good
		bad.CAFile = other.CAFile
		err := check(t, brokers, kafkaauth.Config{TLS: bad, SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "plainuser", Password: canary}})
		require.ErrorContains(t, err, "x509")
	})
	t.Run("wrong server name", func(t *testing.T) {
		bad := good
		bad.ServerName = "kafka.example.com"
		err := check(t, brokers, kafkaauth.Config{TLS: bad, SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "plainuser", Password: canary}})
		require.ErrorContains(t, err, "kafka.example.com")
	})
	t.Run("plaintext client to the TLS listener", func(t *testing.T) {
		err := check(t, brokers, kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "plainuser", Password: canary}})
		require.Error(t, err)
		require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
		require.ErrorContains(t, err, "TLS")
		t.Log(err)
	})
	t.Run("no SASL", func(t *testing.T) {
		err := check(t, brokers, kafkaauth.Config{TLS: good})
		require.Error(t, err)
		require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
		t.Log(err)
	})
}

// TestExpiredServerCertificate: a broker whose certificate has expired is
// refused by the client, with x509's reason.
func TestExpiredServerCertificate(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	certPEM, keyPEM := p.Issue(t, "localhost", time.Now().Add(-time.Minute), x509.ExtKeyUsageServerAuth)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	err = check(t, cluster.ListenAddrs(), kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile, ServerName: "localhost"}})
	require.ErrorContains(t, err, "expired")
	require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
}

// TestMinVersion: tls.min_version 1.3 refuses a broker that offers 1.2 at
// most.
func TestMinVersion(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	srv := p.ServerTLS(false)
	srv.MaxVersion = tls.VersionTLS12
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(srv))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	require.NoError(t, check(t, cluster.ListenAddrs(), kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile, MinVersion: "1.2"}}))
	err = check(t, cluster.ListenAddrs(), kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile, MinVersion: "1.3"}})
	require.ErrorContains(t, err, "protocol version")
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	err := check(t, []string{"127.0.0.1:1"}, kafkaauth.Config{})
	require.ErrorIs(t, err, kafkaauth.ErrUnreachable)
}

func TestTLSListenerToPlainClient(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	err = check(t, cluster.ListenAddrs(), kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile}})
	require.Error(t, err)
	require.NotErrorIs(t, err, kafkaauth.ErrUnreachable)
	require.ErrorContains(t, err, "plaintext listener")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  kafkaauth.Config
		want string
	}{
		{kafkaauth.Config{TLS: kafkaauth.TLS{CertFile: "x"}}, "tls.cert_file"},
		{kafkaauth.Config{TLS: kafkaauth.TLS{MinVersion: "1.0"}}, "tls.min_version"},
		{kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "GSSAPI"}}, "sasl.mechanism"},
		{kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "u"}}, "sasl.password"},
		{kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "PLAIN", Password: canary}}, "sasl.username"},
		{kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "OAUTHBEARER"}}, "sasl.token_file"},
		{kafkaauth.Config{SASL: kafkaauth.SASL{Password: canary}}, "sasl.mechanism"},
	} {
		err := c.cfg.Validate()
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), canary)
	}
	_, err := kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: "/nonexistent"}}.Options()
	require.ErrorContains(t, err, "sasl.password_file")
	_, err = kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: "/nonexistent"}}.Options()
	require.ErrorContains(t, err, "tls.ca_file")
}

// TestSecretFilesAreReread: the OAUTHBEARER token and the SCRAM password
// are read from their files at each authentication.
func TestSecretFilesAreReread(t *testing.T) {
	t.Parallel()
	tokenFile := writeFile(t, "token-one")
	m, err := kafkaauth.SASL{Mechanism: "OAUTHBEARER", TokenFile: tokenFile}.Build()
	require.NoError(t, err)
	require.Equal(t, "OAUTHBEARER", m.Name())
	_, first, err := m.Authenticate(t.Context(), "h:9092")
	require.NoError(t, err)
	require.Contains(t, string(first), "auth=Bearer token-one")
	require.NoError(t, os.WriteFile(tokenFile, []byte("token-two\n"), 0o600))
	_, first, err = m.Authenticate(t.Context(), "h:9092")
	require.NoError(t, err)
	require.Contains(t, string(first), "auth=Bearer token-two")
	require.NoError(t, os.WriteFile(tokenFile, nil, 0o600))
	_, _, err = m.Authenticate(t.Context(), "h:9092")
	require.ErrorContains(t, err, "is empty")

	pw := writeFile(t, "pw-one")
	m, err = kafkaauth.SASL{Mechanism: "PLAIN", Username: "u", PasswordFile: pw}.Build()
	require.NoError(t, err)
	_, first, err = m.Authenticate(t.Context(), "h:9092")
	require.NoError(t, err)
	require.Equal(t, "\x00u\x00pw-one", string(first))
	require.NoError(t, os.WriteFile(pw, []byte("pw-two"), 0o600))
	_, first, err = m.Authenticate(t.Context(), "h:9092")
	require.NoError(t, err)
	require.Equal(t, "\x00u\x00pw-two", string(first))
}

// TestPasswordFileRotation: a SCRAM login against kfake follows the file.
func TestPasswordFileRotation(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "u", "new-"+canary))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	pw := writeFile(t, "old-"+canary)
	cfg := kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "SCRAM-SHA-512", Username: "u", PasswordFile: pw}}
	require.Error(t, check(t, cluster.ListenAddrs(), cfg))
	require.NoError(t, os.WriteFile(pw, []byte("new-"+canary), 0o600))
	require.NoError(t, check(t, cluster.ListenAddrs(), cfg))
}

// TestPasswordEnv: the password may come from a named environment
// variable; an unset one fails when the options are built.
func TestPasswordEnv(t *testing.T) {
	t.Setenv("EC_TEST_KAFKA_PW", "pw-from-env")
	m, err := kafkaauth.SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "EC_TEST_KAFKA_PW"}.Build()
	require.NoError(t, err)
	_, first, err := m.Authenticate(t.Context(), "h:9092")
	require.NoError(t, err)
	require.Equal(t, "\x00u\x00pw-from-env", string(first))
	_, err = kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "EC_TEST_UNSET_VAR"}}.Options()
	require.ErrorContains(t, err, "EC_TEST_UNSET_VAR is not set")
	err = kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "PLAIN", Username: "u", Password: "p", PasswordEnv: "X"}}.Validate()
	require.ErrorContains(t, err, "exactly one")
}
