package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/producerapi"
)

func parseValidate(t *testing.T, body string) (Config, error) {
	t.Helper()
	cfg := Default()
	if err := Parse([]byte(body+sqliteBase), &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// The producer API is off by default; its settings are checked only when
// it is on, and every mistake is named by YAML path.
func TestIngressConfig(t *testing.T) {
	t.Parallel()
	cfg, err := parseValidate(t, "ingress:\n  rate: -1\n")
	require.NoError(t, err, "off: nothing but the kind of values is checked")
	require.Empty(t, cfg.Ingress.Listen)

	cfg, err = parseValidate(t, "ingress:\n  listen: 127.0.0.1:8081\n  tokens:\n    - {name: orders, biz_ids: [orders, \"1001\"], token: 0123456789abcdef, rate: 50}\n")
	require.NoError(t, err)
	require.Equal(t, []IngressToken{{Name: "orders", BizIDs: []string{"orders", "1001"}, Token: "0123456789abcdef", Rate: 50}}, cfg.Ingress.Tokens)
	require.Equal(t, float64(producerapi.DefaultRate), cfg.Ingress.Rate)

	_, err = parseValidate(t, "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n")
	require.NoError(t, err, "insecure on loopback (dev)")

	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"no tokens", "ingress:\n  listen: 127.0.0.1:8081\n", []string{"ingress.tokens: at least one producer token is required"}},
		{"insecure reachable", "ingress:\n  listen: 0.0.0.0:8081\n  insecure: true\n", []string{"ingress.insecure", "reachable from other hosts"}},
		{"bad listen", "ingress:\n  listen: nowhere\n  insecure: true\n", []string{"ingress.listen", "is not host:port"}},
		{"same as http", "ingress:\n  listen: 127.0.0.1:8080\n  insecure: true\n", []string{"ingress.listen: must differ from http.listen"}},
		{"short token", "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [x], token: short}]\n", []string{"ingress.tokens[0].token: must be at least 16 characters"}},
		{"admin token reused", "admin:\n  tokens: [{name: ops, scope: admin, token: 0123456789abcdef}]\ningress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [x], token: 0123456789abcdef}]\n", []string{"ingress.tokens[0].token: same secret as an admin token"}},
		{"no biz ids", "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, token: 0123456789abcdef}]\n", []string{"ingress.tokens[0].biz_ids: at least one bizID"}},
		{"bad biz id", "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [\"a:b\"], token: 0123456789abcdef}]\n", []string{"ingress.tokens[0].biz_ids[0]", `"a:b" is not a bizID`}},
		{"name twice", "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [x], token: 0123456789abcdef}, {name: a, biz_ids: [x], token: 0123456789abcdeg}]\n", []string{"ingress.tokens[1].name"}},
		{"secret twice", "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [x], token: 0123456789abcdef}, {name: b, biz_ids: [x], token: 0123456789abcdef}]\n", []string{"ingress.tokens[1].token: same secret as another producer token"}},
		{"admin name and secret twice", "admin:\n  tokens: [{name: ops, scope: admin, token: 0123456789abcdef}, {name: ops, scope: read, token: 0123456789abcdef}, {name: \" \", scope: read, token: short}]\n", []string{`admin.tokens[1].name: "ops" is used by another token`, "admin.tokens[1].token: same secret as another token", "admin.tokens[2].name: is required", "admin.tokens[2].token: must be at least 16 characters"}},
		{"rate", "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n  rate: 0\n  burst: 0\n", []string{"ingress.rate: must be positive", "ingress.burst: must be at least 1"}},
		{"batch bytes", "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n  max_batch_bytes: 1000\n", []string{"ingress.max_batch_bytes: must be at least"}},
		{"tls half", "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n  tls: {cert_file: /c.pem}\n", []string{"ingress.tls: cert_file and key_file go together"}},
		{"unknown key", "ingress:\n  tokenz: []\n", []string{"ingress.tokenz (line 2): unknown key"}},
		{"kafka compression", "kafka:\n  compression: brotli\n", []string{"kafka.compression", `unknown codec "brotli"`}},
		{"target compression", "forward:\n  targets:\n    - {name: kafka, type: kafka, compression: \"none,gzip\"}\n", []string{"forward.targets[0].compression", "none must come last"}},
		{"rocketmq compression", "forward:\n  targets:\n    - {name: kafka, type: kafka}\n    - {name: r, type: rocketmq, name_servers: [\"127.0.0.1:9876\"], compression: gzip}\n", []string{"forward.targets[1].compression: is for kafka targets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseValidate(t, tc.body)
			requireUserError(t, err, tc.want...)
		})
	}
}

func TestIngressTokenFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(p, []byte("from-a-file-0123456789\n"), 0o600))
	cfg, err := parseValidate(t, "ingress:\n  listen: 127.0.0.1:8081\n  tokens: [{name: a, biz_ids: [\"*\"], token_file: "+p+"}]\n")
	require.Error(t, err, "not read yet")
	require.NoError(t, cfg.ResolveSecrets())
	require.NoError(t, cfg.Validate())
	require.Equal(t, "from-a-file-0123456789", cfg.Ingress.Tokens[0].Token)

	cfg.Ingress.Tokens[0].TokenFile = filepath.Join(t.TempDir(), "missing")
	err = cfg.ResolveSecrets()
	require.ErrorContains(t, err, "ingress.tokens[0].token_file")
	require.False(t, strings.Contains(err.Error(), "from-a-file"))
}

func TestCompressionSettings(t *testing.T) {
	cfg, err := parseValidate(t, "kafka:\n  compression: \"zstd, gzip\"\nforward:\n  targets:\n    - {name: kafka, type: kafka, compression: none}\n")
	require.NoError(t, err)
	require.Equal(t, "zstd, gzip", cfg.Kafka.Compression)
	require.Equal(t, "none", cfg.Forward.Targets[0].Compression)
	t.Setenv("EVENTCENTER_KAFKA_COMPRESSION", "lz4")
	require.NoError(t, ApplyEnv(&cfg))
	require.Equal(t, "lz4", cfg.Kafka.Compression)
}

// The producer API's limits are producerapi.Config.Validate's, reported
// under the settings' names (and the variable a value came from); the
// ones it shares with ingest (ingest.max_payload_bytes,
// forward.max_delay) are reported once, by ingest.
func TestIngressLimitsAreTheProducerAPIs(t *testing.T) {
	on := "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n"
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"max batch", on + "  max_batch: 0\n", []string{"ingress.max_batch: must be at least 1, got 0"}},
		{"max concurrent", on + "  max_concurrent: -2\n", []string{"ingress.max_concurrent: must be at least 1, got -2"}},
		{"produce timeout", on + "  produce_timeout: 0s\n", []string{"ingress.produce_timeout: must be positive, got 0s"}},
		{"batch bytes names the payload setting", on + "  max_batch_bytes: 1000\n",
			[]string{"ingress.max_batch_bytes: must be at least ingest.max_payload_bytes + 64 KiB (1114112), to fit a batch of one largest envelope, got 1000"}},
		{"payload limit once", on + "ingest:\n  max_payload_bytes: 0\n", []string{"ingest.max_payload_bytes: must be 1 to"}},
		{"max delay once", on + "forward:\n  max_delay: 0s\n", []string{"forward.max_delay: must be within (0, 8784h0m0s], got 0s"}},
		{"max delay once, api off", "forward:\n  max_delay: 0s\n", []string{"forward.max_delay: must be within (0, 8784h0m0s], got 0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseValidate(t, tc.body)
			requireUserError(t, err, tc.want...)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), "each problem once:\n%s", err)
		})
	}

	t.Run("from a variable", func(t *testing.T) {
		t.Setenv("EVENTCENTER_INGRESS_BURST", "0")
		cfg := Default()
		require.NoError(t, Parse([]byte(on+sqliteBase), &cfg))
		require.NoError(t, ApplyEnv(&cfg))
		requireUserError(t, cfg.Validate(), "ingress.burst (from EVENTCENTER_INGRESS_BURST): must be at least 1, got 0")
	})
}

// ProducerAPIConfig carries every setting the center used to hand the
// producer API itself.
func TestProducerAPIConfigMapsTheSettings(t *testing.T) {
	t.Parallel()
	cfg, err := parseValidate(t, "ingress:\n  listen: 127.0.0.1:8081\n  insecure: true\n  rate: 5\n  burst: 7\n  max_batch: 9\n"+
		"  max_batch_bytes: 2000000\n  max_concurrent: 3\n  produce_timeout: 4s\n"+
		"kafka:\n  control_topic: ctl\n  lanes: [{name: vip, id: 1, biz_ids: [gold]}]\ningest:\n  max_payload_bytes: 1000\nforward:\n  max_delay: 48h\n")
	require.NoError(t, err)
	pc := cfg.ProducerAPIConfig()
	require.InDelta(t, 5.0, pc.Rate, 0)
	require.Equal(t, []any{7, 9, 2000000, 3, 4 * time.Second, 1000, 48 * time.Hour, "ctl", true},
		[]any{pc.Burst, pc.MaxBatch, pc.MaxBatchBytes, pc.MaxConcurrent, pc.ProduceTimeout, pc.MaxPayload, pc.MaxDelay, pc.ControlTopic, pc.Insecure})
	require.Equal(t, "ctl.lane.vip", pc.ControlTopicFor("gold"))
	require.Equal(t, "ctl", pc.ControlTopicFor("other"))
}
