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
      allow: ["http://orders:8080/"]
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
		"store:\n  driver: mysql\n":                                                  "store.driver",
		"store:\n  driver: postgres\n  dsn: mysql://x\n":                             "store.dsn",
		"kafka:\n  brokers: []\n":                                                    "kafka.brokers",
		"forward:\n  default_target: nope\n":                                         "forward.default_target",
		"forward:\n  targets:\n    - name: r\n      type: rocketmq\n":                "forward.targets[0].name_servers",
		"checkback:\n  biz:\n    - biz_id: 'a:b'\n":                                  "checkback.biz[0].biz_id",
		"admin:\n  tokens:\n    - name: x\n      token: short\n      scope: admin\n": "admin.tokens[0].token",
		"log:\n  level: loud\n":                                                      "log.level",
		"ingest:\n  parallelism: 0\n":                                                "ingest.parallelism",
		"ingest:\n  min_apply_records: -1\n":                                         "ingest.min_apply_records",
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
