package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "eventcenter.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

const valid = `
kafka:
  brokers: ["10.0.0.1:9092", "10.0.0.2:9092"]
  control_topic: tx.control
store:
  driver: postgres
  dsn: postgres://ec:secret@db:5432/ec
forward:
  default_target: main
  targets:
    - name: main
      type: kafka
    - name: rmq
      type: rocketmq
      name_servers: ["10.0.0.9:9876"]
checkback:
  max_attempts: 5
  biz:
    - biz_id: "1001"
      endpoint: http://orders:8080/check
      allow: ["http://orders:8080/", "zookeeper://zk1:2181", "tri://[10.0.0.0/8]:20000", "jsonrpc://[fd00::/8]:8080"]
      max_attempts: 3
`

func TestLoadFileAndEnvPrecedence(t *testing.T) {
	t.Setenv("EVENTCENTER_STORE_DSN", "postgres://ec@other:5432/ec")
	t.Setenv("EVENTCENTER_CHECKBACK_FIRST_DELAY", "7s")
	t.Setenv("EVENTCENTER_INGEST_PARALLELISM", "8")
	t.Setenv("EVENTCENTER_ADMIN_TOKENS", "ops:admin:0123456789abcdef0123,viewer:read:abcdefabcdefabcdef")
	cfg, err := Load(write(t, valid))
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1:9092", "10.0.0.2:9092"}, cfg.Kafka.Brokers)
	require.Equal(t, "tx.control.dlq", cfg.Kafka.DLQ())
	require.Equal(t, "postgres://ec@other:5432/ec", cfg.Store.DSN, "environment beats the file")
	require.Equal(t, 7*time.Second, cfg.Checkback.FirstDelay)
	require.Equal(t, 8, cfg.Ingest.Parallelism)
	require.Equal(t, 500, cfg.Ingest.MinApplyRecords, "default")
	require.Equal(t, 5, cfg.Checkback.MaxAttempts)
	require.Equal(t, 3, cfg.Checkback.Biz[0].MaxAttempts)
	require.Equal(t, []string{"http://orders:8080/", "zookeeper://zk1:2181", "tri://[10.0.0.0/8]:20000", "jsonrpc://[fd00::/8]:8080"},
		cfg.Checkback.Biz[0].Allow, "network rules load")
	require.Len(t, cfg.Forward.Targets, 2, "file targets replace the default list")
	require.Len(t, cfg.Admin.Tokens, 2)
	require.Equal(t, "viewer", cfg.Admin.Tokens[1].Name)
	require.Equal(t, 10*time.Second, cfg.Checkback.BackoffBase, "defaults stay where the file is silent")
}

func TestUnknownKeyIsAnError(t *testing.T) {
	_, err := Load(write(t, valid+"\nforwrad:\n  max_attempts: 3\n"))
	require.ErrorContains(t, err, "forwrad")
}

func TestValidationNamesTheField(t *testing.T) {
	cases := map[string]string{
		"store:\n  driver: oracle\n":                                                 "store.driver",
		"store:\n  driver: mysql\n":                                                  "store.dsn",
		"store:\n  driver: mysql\n  dsn: 'ec:pw@tcp(db:3306)/'\n":                    "store.dsn",
		"store:\n  driver: postgres\n  dsn: mysql://x\n":                             "store.dsn",
		"kafka:\n  brokers: []\n":                                                    "kafka.brokers",
		"forward:\n  default_target: nope\n":                                         "forward.default_target",
		"forward:\n  targets:\n    - name: r\n      type: rocketmq\n":                "forward.targets[0].name_servers",
		"checkback:\n  biz:\n    - biz_id: 'a:b'\n":                                  "checkback.biz[0].biz_id",
		"admin:\n  tokens:\n    - name: x\n      token: short\n      scope: admin\n": "admin.tokens[0].token",
		"log:\n  level: loud\n":                                                      "log.level",
		"ingest:\n  parallelism: 0\n":                                                "ingest.parallelism",
		"ingest:\n  min_apply_records: -1\n":                                         "ingest.min_apply_records",
		"ingest:\n  fresh_fetch_wait: 1s\n":                                          "ingest.fresh_fetch_wait",
		"forward:\n  inline_timeout: 30s\n":                                          "forward.inline_timeout",
		"forward:\n  inline_timeout: 0s\n":                                           "forward.inline_timeout",
		"forward:\n  order:\n    dead: drop\n":                                       "forward.order.dead",
		"forward:\n  order:\n    biz:\n      - {biz_id: a, dead: x}\n":               "forward.order.biz[0].dead",
	}
	for body, field := range cases {
		base := "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n"
		if len(body) >= 6 && body[:6] == "store:" {
			base = ""
		}
		_, err := Load(write(t, base+body))
		require.ErrorContains(t, err, field, "config:\n%s", body)
	}
}

func TestBadTokensEnv(t *testing.T) {
	t.Setenv("EVENTCENTER_ADMIN_TOKENS", "justatoken")
	_, err := Load(write(t, valid))
	require.ErrorContains(t, err, "EVENTCENTER_ADMIN_TOKENS")
}

func TestDSNPasswordRedacted(t *testing.T) {
	t.Setenv("EVENTCENTER_STORE_DSN", "mysql://u:hunter2@h/db")
	_, err := Load(write(t, valid))
	require.ErrorContains(t, err, "store.dsn")
	require.NotContains(t, err.Error(), "hunter2")
}

// Every forward target's producer must fit every message ingest accepts:
// a combination where it cannot is refused, naming the key.
func TestTargetMessageBytesMustFitIngestPayload(t *testing.T) {
	base := "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n"
	kafkaAt := func(n string) string {
		return base + "forward:\n  default_target: k\n  targets:\n    - name: k\n      type: kafka\n      max_message_bytes: " + n + "\n"
	}
	// Kafka's default max.message.bytes cannot carry the default 1 MiB
	// payload plus headers: say which key and what would fit.
	_, err := Load(write(t, kafkaAt("1048588")))
	require.ErrorContains(t, err, "forward.targets[0].max_message_bytes: 1048588 is below ingest.max_payload_bytes (1048576)")
	require.ErrorContains(t, err, "at least 1116160")
	require.ErrorContains(t, err, "at most 981004")

	cfg, err := Load(write(t, kafkaAt("1048588")+"ingest:\n  max_payload_bytes: 981004\n"))
	require.NoError(t, err, "a lower payload limit fits")
	require.Equal(t, 1048588, cfg.MessageBytes(cfg.Forward.Targets[0]))

	// Below the overhead itself no payload limit helps: it is not
	// offered ("at most 0" was).
	for _, n := range []string{"1000", "67584"} {
		_, err = Load(write(t, kafkaAt(n)))
		require.ErrorContains(t, err, "forward.targets[0].max_message_bytes: "+n+" is below")
		require.ErrorContains(t, err, "raise it to at least 1116160 (and the forward topics' max.message.bytes) ("+n+" leaves no room for a payload after the 67584 bytes)")
		require.NotContains(t, err.Error(), "lower ingest.max_payload_bytes")
	}
	_, err = Load(write(t, kafkaAt("67585")))
	require.ErrorContains(t, err, "or lower ingest.max_payload_bytes to at most 1")

	_, err = Load(write(t, kafkaAt("-1")))
	require.ErrorContains(t, err, "forward.targets[0].max_message_bytes: must not be negative")
	_, err = Load(write(t, kafkaAt("2000000000")))
	require.ErrorContains(t, err, "forward.targets[0].max_message_bytes: must be at most 1073741824")

	// The defaults fit: Kafka's follows the payload limit, RocketMQ's is
	// 4 MiB.
	cfg, err = Load(write(t, valid+"ingest:\n  max_payload_bytes: 3000000\n"))
	require.NoError(t, err)
	require.Equal(t, 3000000+RecordOverhead, cfg.MessageBytes(cfg.Forward.Targets[0]))
	require.Equal(t, 4<<20, cfg.MessageBytes(cfg.Forward.Targets[1]))
	cfg, err = Load(write(t, valid+"ingest:\n  max_payload_bytes: 1000\n"))
	require.NoError(t, err)
	require.Equal(t, 1<<20+RecordOverhead, cfg.MessageBytes(cfg.Forward.Targets[0]), "a small payload limit does not shrink the default")

	_, err = Load(write(t, valid+"ingest:\n  max_payload_bytes: 5000000\n"))
	require.ErrorContains(t, err, "forward.targets[1].max_message_bytes: defaults to RocketMQ's 4 MiB, which is 4194304, below ingest.max_payload_bytes (5000000)")
	require.NotContains(t, err.Error(), "forward.targets[0]", "the Kafka target follows the payload limit")

	_, err = Load(write(t, base+"ingest:\n  max_payload_bytes: 5000000\n  dlq_retry_budget: 1m\n"+
		"forward:\n  default_target: r\n  targets:\n    - name: r\n      type: rocketmq\n      name_servers: [\"10.0.0.9:9876\"]\n      max_message_bytes: 4999999\n"))
	require.ErrorContains(t, err, "forward.targets[0].max_message_bytes: set 4999999, below ingest.max_payload_bytes (5000000)")

	_, err = Load(write(t, base+"ingest:\n  max_payload_bytes: 1073741824\n"))
	require.ErrorContains(t, err, "ingest.max_payload_bytes: must be 1 to")
}

func TestDLQRetryBudget(t *testing.T) {
	t.Setenv("EVENTCENTER_INGEST_DLQ_RETRY_BUDGET", "45s")
	cfg, err := Load(write(t, valid))
	require.NoError(t, err)
	require.Equal(t, 45*time.Second, cfg.Ingest.DLQRetryBudget)
	t.Setenv("EVENTCENTER_INGEST_DLQ_RETRY_BUDGET", "-1s")
	_, err = Load(write(t, valid))
	require.ErrorContains(t, err, "ingest.dlq_retry_budget")
}

// TestCreateTopicsKeys: kafka.create_topics is off unless the file or the
// environment turns it on; kafka.control_partitions defaults to 8 and must
// be positive.
func TestCreateTopicsKeys(t *testing.T) {
	cfg, err := Load(write(t, valid))
	require.NoError(t, err)
	require.False(t, cfg.Kafka.CreateTopics, "serve never creates topics unless told")
	require.Equal(t, 8, cfg.Kafka.ControlPartitions)

	fromFile := strings.Replace(valid, "  control_topic: tx.control\n", "  control_topic: tx.control\n  create_topics: true\n  control_partitions: 3\n", 1)
	cfg, err = Load(write(t, fromFile))
	require.NoError(t, err)
	require.True(t, cfg.Kafka.CreateTopics)
	require.Equal(t, 3, cfg.Kafka.ControlPartitions)

	t.Setenv("EVENTCENTER_KAFKA_CREATE_TOPICS", "true")
	t.Setenv("EVENTCENTER_KAFKA_CONTROL_PARTITIONS", "12")
	cfg, err = Load(write(t, valid))
	require.NoError(t, err)
	require.True(t, cfg.Kafka.CreateTopics)
	require.Equal(t, 12, cfg.Kafka.ControlPartitions)

	t.Setenv("EVENTCENTER_KAFKA_CONTROL_PARTITIONS", "0")
	_, err = Load(write(t, valid))
	require.ErrorContains(t, err, "kafka.control_partitions")
}

func TestMySQLStore(t *testing.T) {
	cfg, err := Load(write(t, strings.Replace(valid, "  driver: postgres\n  dsn: postgres://ec:secret@db:5432/ec",
		"  driver: mysql\n  dsn: ec:secret@tcp(db:3306)/ec?timeout=5s", 1)))
	require.NoError(t, err)
	require.Equal(t, "mysql", cfg.Store.Driver)
	require.Equal(t, "ec:secret@tcp(db:3306)/ec?timeout=5s", cfg.Store.DSN)
	for _, dsn := range []string{"ec:hunter2@tcp(db:3306)/", "ec:hunter2@tcp(db:3306/ec"} {
		t.Setenv("EVENTCENTER_STORE_DRIVER", "mysql")
		t.Setenv("EVENTCENTER_STORE_DSN", dsn)
		_, err = Load(write(t, valid))
		require.ErrorContains(t, err, "store.dsn", dsn)
		require.NotContains(t, err.Error(), "hunter2", dsn)
	}
}

func TestOrderSettings(t *testing.T) {
	cfg, err := Load(write(t, "store:\n  driver: sqlite\n  dsn: /tmp/x.db\nforward:\n  order:\n    dead: hold\n    biz:\n      - {biz_id: pay, dead: skip}\n      - {biz_id: ship, by_forward_key: true}\n"))
	require.NoError(t, err)
	require.True(t, cfg.Forward.Order.ReleaseOnDead("pay"))
	require.False(t, cfg.Forward.Order.ReleaseOnDead("ship"), "the default: hold")
	require.True(t, cfg.Forward.Order.ByForwardKey("ship"))
	require.False(t, cfg.Forward.Order.ByForwardKey("pay"))
	require.Equal(t, "hold", Default().Forward.Order.Dead)
}
