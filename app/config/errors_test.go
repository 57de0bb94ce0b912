package config

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// goIdentifier matches what a configuration error must not show: Go types
// and packages, and the Go field names of this package's and the
// components' configuration structs.
var goIdentifier = regexp.MustCompile(`config\.|Config|time\.Duration|\[\]string|reflect|env: |` +
	`\b(FirstDelay|BackoffBase|BackoffCap|MaxAttempts|Timeout|Workers|EndpointConcurrency|Lease|Allow|BizIDs?|` +
	`Endpoint|ForceEndpoint|DLQTopic|ControlTopic|Brokers|NameServers|Group|Tokens|Token|Name|Scope|Checkback|Kafka|Forward|Targets)\b`)

func requireUserError(t *testing.T, err error, want ...string) {
	t.Helper()
	require.Error(t, err)
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
	require.NotRegexp(t, goIdentifier, err.Error())
}

const sqliteBase = "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n"

// Every way a file can be wrong is reported by YAML path: unknown keys,
// values of the wrong kind, and what the components would refuse later.
func TestFileErrorsNameTheYAMLPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "checkback:\n  frist_delay: 5s\n", []string{"checkback.frist_delay (line 2): unknown key", "first_delay"}},
		{"unknown key in a list item", "forward:\n  targets:\n    - name: k\n      type: kafka\n      brokerz: [a]\n", []string{"forward.targets[0].brokerz (line 5): unknown key"}},
		{"unknown top-level key", "forwrad:\n  max_attempts: 3\n", []string{"forwrad (line 1): unknown key"}},
		{"unknown key in an inline policy", "checkback:\n  biz:\n    - biz_id: a\n      timout: 1s\n", []string{"checkback.biz[0].timout (line 4): unknown key"}},
		{"duration as a number", "checkback:\n  first_delay: 30\n", []string{"checkback.first_delay (line 2): want a duration such as 30s", `got "30"`}},
		{"duration as text", "forward:\n  lease: soon\n", []string{"forward.lease (line 2): want a duration", `got "soon"`}},
		{"int as text", "ingest:\n  parallelism: many\n", []string{"ingest.parallelism (line 2): want a whole number"}},
		{"bool as text", "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n  auto_migrate: perhaps\n", []string{"store.auto_migrate (line 4): want true or false"}},
		{"list as a scalar", "checkback:\n  allow: http://h:1\n", []string{"checkback.allow (line 2): want a list"}},
		{"mapping as a scalar", "checkback: 5\n", []string{"checkback (line 1): want a mapping"}},
		{"scalar as a mapping", "kafka:\n  control_topic: {a: b}\n", []string{"kafka.control_topic (line 2): want a string, got a mapping"}},
		{"document not a mapping", "- a\n", []string{"the file (line 1): want a mapping"}},
		{"allow entry", "checkback:\n  allow: [\"http://h:1\", \"ftp://h\"]\n", []string{"checkback.allow[1]", `"ftp://h"`}},
		{"biz allow entry", "checkback:\n  biz:\n    - biz_id: a\n      allow: [\"http://h/?q=1\"]\n", []string{"checkback.biz[0].allow[0]"}},
		{"allow network ambiguous", "checkback:\n  allow: [\"zookeeper://zk:2181\", \"tri://10.0.0.0/8\"]\n", []string{"checkback.allow[1]", `ambiguous: "tri://10.0.0.0/8" reads as the path prefix /8 on the single host 10.0.0.0`, "tri://[10.0.0.0/8]"}},
		{"allow network host bits", "checkback:\n  biz:\n    - biz_id: a\n      allow: [\"tri://[10.0.0.5/8]:20000\"]\n", []string{"checkback.biz[0].allow[0]", "write the network [10.0.0.0/8] or the single host 10.0.0.5"}},
		{"biz endpoint", "checkback:\n  biz:\n    - biz_id: a\n      endpoint: dubbo://zk:2181/x\n", []string{"checkback.biz[0].endpoint", "registry addresses are not supported"}},
		{"force without endpoint", "checkback:\n  biz:\n    - biz_id: a\n      force_endpoint: true\n", []string{"checkback.biz[0].force_endpoint"}},
		{"backoff cap below base", "checkback:\n  backoff_base: 1m\n  backoff_cap: 10s\n", []string{"checkback.backoff_cap", "checkback.backoff_base"}},
		{"biz backoff cap below base", "checkback:\n  biz:\n    - biz_id: a\n      backoff_base: 10m\n", []string{"checkback.biz[0].backoff_cap"}},
		{"endpoint concurrency above workers", "checkback:\n  workers: 4\n  endpoint_concurrency: 8\n", []string{"checkback.endpoint_concurrency", "checkback.workers"}},
		{"lease below a biz timeout", "checkback:\n  biz:\n    - biz_id: a\n      timeout: 1m\n", []string{"checkback.lease", "checkback.biz[0].timeout"}},
		{"dlq topic is the control topic", "kafka:\n  dlq_topic: eventcenter.control\n", []string{"kafka.dlq_topic"}},
		{"target name", "forward:\n  default_target: k\n  targets:\n    - name: k\n      type: kafka\n    - type: kafka\n", []string{"forward.targets[1].name"}},
		{"broker port", "kafka:\n  brokers: [\"k:9092\", \"k:x\", \"a:b:c\", \":9092\"]\n", []string{"kafka.brokers[1]", "kafka.brokers[2]", "kafka.brokers[3]"}},
		{"target broker", "forward:\n  targets:\n    - name: kafka\n      type: kafka\n      brokers: [\"nohost\"]\n", []string{"forward.targets[0].brokers[0]"}},
		{"rocketmq name server not an ip", "forward:\n  targets:\n    - name: kafka\n      type: kafka\n    - name: r\n      type: rocketmq\n      name_servers: [\"ns.local:9876\"]\n", []string{"forward.targets[1].name_servers[0]", "IP literal"}},
		{"rocketmq group", "forward:\n  targets:\n    - name: kafka\n      type: kafka\n    - name: r\n      type: rocketmq\n      group: \"a b\"\n      name_servers: [\"10.0.0.1:9876\"]\n", []string{"forward.targets[1].group"}},
		{"listen without a port", "http:\n  listen: 127.0.0.1\n", []string{"http.listen", `"127.0.0.1" is not host:port`}},
		{"listen port out of range", "http:\n  listen: 127.0.0.1:99999\n", []string{"http.listen", `port "99999" must be a number from 0 to 65535`}},
		{"listen port not a number", "http:\n  listen: \":http\"\n", []string{"http.listen", `port "http"`}},
		{"control topic name", "kafka:\n  control_topic: \"bad topic name!\"\n", []string{"kafka.control_topic", `kafka topic "bad topic name!" is invalid: only letters, digits, '.', '_' and '-'`}},
		{"control topic dot", "kafka:\n  control_topic: \"..\"\n", []string{"kafka.control_topic", `".." is not a kafka topic name`}},
		{"control topic too long", "kafka:\n  control_topic: " + strings.Repeat("t", 250) + "\n", []string{"kafka.control_topic", "250 characters, at most 249"}},
		{"control topic too long for its dlq", "kafka:\n  control_topic: " + strings.Repeat("t", 249) + "\n", []string{"kafka.control_topic", "the dead-letter topic named after it", "253 characters"}},
		{"dlq topic name", "kafka:\n  dlq_topic: \"dead|letters\"\n", []string{"kafka.dlq_topic", `"dead|letters" is invalid`}},
		{"control partitions", "kafka:\n  control_partitions: 100000\n", []string{"kafka.control_partitions: must be 1 to 1000, got 100000"}},
		{"token name twice", "admin:\n  tokens:\n    - {name: a, token: 0123456789abcdef, scope: read}\n    - {name: a, token: 0123456789abcdeg, scope: read}\n", []string{"admin.tokens[1].name"}},
		{"token secret twice", "admin:\n  tokens:\n    - {name: a, token: 0123456789abcdef, scope: read}\n    - {name: b, token: 0123456789abcdef, scope: read}\n", []string{"admin.tokens[1].token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The base goes after the case's body: line numbers stay.
			body := tc.body
			if !strings.Contains(body, "store:") && !strings.HasPrefix(body, "-") {
				body += sqliteBase
			}
			cfg := Default()
			err := Parse([]byte(body), &cfg)
			if err == nil {
				err = cfg.Validate()
			}
			requireUserError(t, err, tc.want...)
		})
	}
}

// Environment variables with values of the wrong kind are named, with what
// they should hold.
func TestEnvErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"EVENTCENTER_CHECKBACK_FIRST_DELAY", "5", []string{"EVENTCENTER_CHECKBACK_FIRST_DELAY: want a duration such as 30s", `got "5"`}},
		{"EVENTCENTER_FORWARD_BACKOFF_BASE", "1 second", []string{"EVENTCENTER_FORWARD_BACKOFF_BASE: want a duration"}},
		{"EVENTCENTER_CHECKBACK_MAX_ATTEMPTS", "ten", []string{"EVENTCENTER_CHECKBACK_MAX_ATTEMPTS: want a whole number", `got "ten"`}},
		{"EVENTCENTER_STORE_AUTO_MIGRATE", "yes please", []string{"EVENTCENTER_STORE_AUTO_MIGRATE: want true or false"}},
		{"EVENTCENTER_INGEST_PARALLELISM", "0", []string{"ingest.parallelism"}},
		{"EVENTCENTER_CHECKBACK_ALLOW", "http://h:1,gopher://h", []string{"checkback.allow[1]"}},
		{"EVENTCENTER_STORE_MAX_CONNS", "-4", []string{"store.max_conns (from EVENTCENTER_STORE_MAX_CONNS): must be at least 1"}},
		{"EVENTCENTER_HTTP_LISTEN", "127.0.0.1", []string{"http.listen (from EVENTCENTER_HTTP_LISTEN): \"127.0.0.1\" is not host:port"}},
		{"EVENTCENTER_KAFKA_CONTROL_TOPIC", "bad topic name!", []string{"kafka.control_topic (from EVENTCENTER_KAFKA_CONTROL_TOPIC)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			_, err := Load(write(t, sqliteBase))
			requireUserError(t, err, tc.want...)
		})
	}
	// Several bad variables are all reported.
	t.Setenv("EVENTCENTER_CHECKBACK_TIMEOUT", "x")
	t.Setenv("EVENTCENTER_RETENTION_BATCH", "y")
	_, err := Load(write(t, sqliteBase))
	requireUserError(t, err, "EVENTCENTER_CHECKBACK_TIMEOUT", "EVENTCENTER_RETENTION_BATCH")
}

// A configuration written by yaml.Marshal (cmd/ectools/internal/soak writes its
// centers' files so) reads back without complaint.
func TestMarshalledConfigParses(t *testing.T) {
	t.Parallel()
	in := Default()
	in.Store.DSN = "postgres://ec@db:5432/ec"
	in.Checkback.Allow = []string{"http://h:1"}
	in.Checkback.Biz = []Biz{{BizID: "a", Endpoint: "Tri://h:1/a.B/m", Policy: Policy{Timeout: time.Second}}}
	in.Admin.Tokens = []Token{{Name: "ops", Token: "0123456789abcdef", Scope: "admin"}}
	data, err := yaml.Marshal(in)
	require.NoError(t, err)
	out := Default()
	require.NoError(t, Parse(data, &out))
	require.NoError(t, out.Validate())
	require.Equal(t, in.Checkback.Biz[0].Policy, out.Checkback.Biz[0].Policy)
	require.Equal(t, in.Checkback.Policy, out.Checkback.Policy)
}

// A value the file gave is named by its YAML path only; a flag that
// overrides the environment is named instead of the variable.
func TestEnvSourceNamedOnlyForEnvValues(t *testing.T) {
	_, err := Load(write(t, sqliteBase+"  max_conns: -4\n"))
	requireUserError(t, err, "store.max_conns: must be at least 1")
	require.NotContains(t, err.Error(), "EVENTCENTER_")

	t.Setenv("EVENTCENTER_HTTP_LISTEN", "127.0.0.1:8080")
	cfg := Default()
	require.NoError(t, ApplyEnv(&cfg))
	cfg.HTTP.Listen = "nohost"
	cfg.SetByFlag("http.listen", "--http-listen")
	err = cfg.Validate()
	requireUserError(t, err, `http.listen (from --http-listen): "nohost" is not host:port`)
	require.NotContains(t, err.Error(), "EVENTCENTER_HTTP_LISTEN")
}
