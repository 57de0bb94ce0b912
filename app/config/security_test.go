package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const canary = "CANARY-config-secret-3a7b"

func secretFile(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(p, []byte(v+"\n"), 0o600))
	return p
}

// TestSecurityKeys: kafka.tls/sasl, per-target tls/sasl and ACL, the
// secret files and retention.audit_period load; secrets from files land in
// their fields without the trailing newline.
func TestSecurityKeys(t *testing.T) {
	tok, cb, rmq, pw := secretFile(t, canary+"-token"), secretFile(t, canary+"-cb"), secretFile(t, canary+"-rmq"), secretFile(t, canary+"-pg")
	t.Setenv("EVENTCENTER_KAFKA_SASL_PASSWORD", canary+"-env")
	cfg, err := Load(write(t, `
kafka:
  tls: {ca_file: /etc/ca.pem, server_name: kafka.internal, min_version: "1.3"}
  sasl: {mechanism: SCRAM-SHA-512, username: center, password_file: /nonexistent}
store:
  driver: postgres
  dsn: postgres://ec@db:5432/ec?sslmode=verify-full&sslrootcert=/etc/ca.pem
  password_file: `+pw+`
admin:
  tokens:
    - {name: ops, scope: admin, token_file: `+tok+`}
forward:
  default_target: main
  targets:
    - {name: main, type: kafka}
    - name: other
      type: kafka
      brokers: ["10.1.0.1:9093"]
      sasl: {mechanism: OAUTHBEARER, token_file: /run/token}
    - name: rmq
      type: rocketmq
      name_servers: ["10.0.0.9:9876"]
      access_key: ak
      secret_key_file: `+rmq+`
checkback:
  biz:
    - {biz_id: "1001", secret_file: `+cb+`}
retention:
  audit_period: 8760h
`))
	require.NoError(t, err)
	require.Equal(t, "kafka.internal", cfg.Kafka.Auth.TLS.ServerName)
	require.Equal(t, canary+"-env", cfg.Kafka.Auth.SASL.Password, "the environment overrides the file")
	require.Empty(t, cfg.Kafka.Auth.SASL.PasswordFile)
	require.Equal(t, canary+"-token", cfg.Admin.Tokens[0].Token)
	require.Equal(t, canary+"-cb", cfg.Checkback.Biz[0].Secret)
	require.Equal(t, canary+"-rmq", cfg.Forward.Targets[2].ACL.SecretKey)
	p, err := cfg.Store.StorePassword()
	require.NoError(t, err)
	require.Equal(t, canary+"-pg", p)
	require.Equal(t, "OAUTHBEARER", cfg.TargetAuth(cfg.Forward.Targets[1]).SASL.Mechanism)
	require.Equal(t, cfg.Kafka.Auth, cfg.TargetAuth(cfg.Forward.Targets[0]))
	require.Equal(t, 8760*time.Hour, cfg.Retention.AuditPeriod)
	require.Equal(t, DefaultAuditPeriod, Default().Retention.AuditPeriod)
}

// TestSecurityErrors: bad settings are named by YAML path; no error shows
// a secret.
func TestSecurityErrors(t *testing.T) {
	other := secretFile(t, "another-token-value")
	for _, tc := range []struct{ yaml, want string }{
		{"kafka:\n  sasl: {mechanism: GSSAPI}\n", "kafka.sasl.mechanism"},
		{"kafka:\n  sasl: {mechanism: PLAIN, username: u}\n", "kafka.sasl.password"},
		{"kafka:\n  tls: {min_version: \"1.1\"}\n", "kafka.tls.min_version"},
		{"kafka:\n  tls: {cert_file: /c.pem}\n", "kafka.tls.cert_file"},
		{"kafka:\n  tls: {ca_fil: /c.pem}\n", "kafka.tls.ca_fil"},
		{"forward:\n  targets:\n    - {name: kafka, type: kafka, sasl: {mechanism: OAUTHBEARER}}\n", "forward.targets[0].sasl.token_file"},
		{"forward:\n  targets:\n    - {name: kafka, type: kafka}\n    - {name: r, type: rocketmq, name_servers: [\"10.0.0.1:9876\"], access_key: ak}\n", "forward.targets[1].access_key"},
		{"forward:\n  targets:\n    - {name: kafka, type: kafka}\n    - {name: r, type: rocketmq, name_servers: [\"10.0.0.1:9876\"], sasl: {mechanism: PLAIN}}\n", "forward.targets[1].tls"},
		{"admin:\n  tokens:\n    - {name: a, scope: admin, token_file: /nonexistent/tok}\n", "admin.tokens[0].token_file"},
		{"admin:\n  tokens:\n    - {name: a, scope: admin, token: " + canary + ", token_file: " + other + "}\n", "not both"},
		{"checkback:\n  biz:\n    - {biz_id: a, secret_file: /nonexistent/s}\n", "checkback.biz[0].secret_file"},
		{"store:\n  password_file: /nonexistent/pw\n", "store.password_file"},
		{"retention:\n  audit_period: -1h\n", "retention.audit_period"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			body := "store:\n  dsn: postgres://ec@db/ec\n" + tc.yaml
			if tc.yaml[:6] == "store:" {
				body = "store:\n  dsn: postgres://ec@db/ec\n" + tc.yaml[len("store:\n"):]
			}
			_, err := Load(write(t, body))
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), canary)
		})
	}
}

// TestEmptySecretFile: an empty secret file is an error (a token of "" would
// lock everyone out, an empty HMAC key would sign with nothing).
func TestEmptySecretFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(p, []byte("\n"), 0o600))
	_, err := Load(write(t, "store:\n  dsn: postgres://ec@db/ec\nadmin:\n  tokens:\n    - {name: a, scope: admin, token_file: "+p+"}\n"))
	require.ErrorContains(t, err, "is empty")
}

// TestAdminTokensEnvErrorHidesTheToken: a malformed EVENTCENTER_ADMIN_TOKENS
// entry is named by position, not shown.
func TestAdminTokensEnvErrorHidesTheToken(t *testing.T) {
	t.Setenv("EVENTCENTER_ADMIN_TOKENS", "ops:admin:0123456789abcdef,"+canary)
	_, err := Load(write(t, "store:\n  dsn: postgres://ec@db/ec\n"))
	require.ErrorContains(t, err, "EVENTCENTER_ADMIN_TOKENS: entry 2")
	require.NotContains(t, err.Error(), canary)
}

// TestSecretsFromEnvironment: check-back secrets and RocketMQ secret keys
// may name an environment variable; an unset one is an error naming it.
func TestSecretsFromEnvironment(t *testing.T) {
	t.Setenv("EC_TEST_CB_SECRET", canary+"-cb")
	t.Setenv("EC_TEST_RMQ_SK", canary+"-rmq")
	body := `
store: {dsn: "postgres://ec@db/ec"}
forward:
  targets:
    - {name: kafka, type: kafka}
    - {name: r, type: rocketmq, name_servers: ["10.0.0.1:9876"], access_key: ak, secret_key_env: EC_TEST_RMQ_SK}
checkback:
  biz:
    - {biz_id: a, secret_env: EC_TEST_CB_SECRET}
`
	cfg, err := Load(write(t, body))
	require.NoError(t, err)
	require.Equal(t, canary+"-cb", cfg.Checkback.Biz[0].Secret)
	require.Equal(t, canary+"-rmq", cfg.Forward.Targets[1].ACL.SecretKey)

	_, err = Load(write(t, "store: {dsn: \"postgres://ec@db/ec\"}\ncheckback:\n  biz:\n    - {biz_id: a, secret_env: EC_TEST_UNSET_VAR}\n"))
	require.ErrorContains(t, err, "checkback.biz[0].secret_env: environment variable EC_TEST_UNSET_VAR is not set")
}
