package config

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
)

// Kafka is the control topic's cluster.
type Kafka struct {
	Brokers      []string `yaml:"brokers" env:"EVENTCENTER_KAFKA_BROKERS" envSeparator:","`
	ControlTopic string   `yaml:"control_topic" env:"EVENTCENTER_KAFKA_CONTROL_TOPIC"`
	// DLQTopic defaults to <control_topic>.dlq.
	DLQTopic string `yaml:"dlq_topic" env:"EVENTCENTER_KAFKA_DLQ_TOPIC"`
	Group    string `yaml:"group" env:"EVENTCENTER_KAFKA_GROUP"`
	ClientID string `yaml:"client_id" env:"EVENTCENTER_KAFKA_CLIENT_ID"`
	// SessionTimeout is how long the group waits for a silent member
	// before giving its partitions to others (a crashed instance's work
	// moves after this long).
	SessionTimeout time.Duration `yaml:"session_timeout" env:"EVENTCENTER_KAFKA_SESSION_TIMEOUT"`
	// MetadataMaxAge is how often the client refreshes topic metadata; it
	// bounds how long a running center takes to consume partitions added
	// to the control topic (zero: franz-go's default, 5m).
	MetadataMaxAge time.Duration `yaml:"metadata_max_age" env:"EVENTCENTER_KAFKA_METADATA_MAX_AGE"`
	// CreateTopics lets the center create the control topic when it is
	// missing, and the dead-letter topics (every lane's too; ControlPartitions
	// partitions, the brokers' default replication factor). Off by default in serve: there a missing
	// control topic is logged as an error and /readyz answers 503 until
	// someone creates it. dev turns it on.
	CreateTopics bool `yaml:"create_topics" env:"EVENTCENTER_KAFKA_CREATE_TOPICS"`
	// ControlPartitions is the partition count of a control topic the
	// center creates (kafka.create_topics); it bounds how many instances
	// share the work.
	ControlPartitions int `yaml:"control_partitions" env:"EVENTCENTER_KAFKA_CONTROL_PARTITIONS"`
	// Compression is the codec of what the center writes to this cluster:
	// dead letters and the producer HTTP API's control records. One of
	// none, gzip, snappy, lz4, zstd, or a comma-separated list in order
	// of preference; "" means gzip for dead letters, which every
	// mainstream client reads without a codec package (see
	// kafkarec.DefaultCompression), and snappy for control records, which
	// only the center reads (kafkarec.ControlCompression).
	Compression string `yaml:"compression" env:"EVENTCENTER_KAFKA_COMPRESSION"`
	// Auth is kafka.tls and kafka.sasl (see security.go).
	Auth kafkaauth.Config `yaml:",inline"`
	// Lanes are extra control topics, each with a consumer of its own
	// (lanes.go); none by default.
	Lanes []Lane `yaml:"lanes"`
}

// DLQ returns the dead-letter topic.
func (k Kafka) DLQ() string {
	if k.DLQTopic != "" {
		return k.DLQTopic
	}
	return k.ControlTopic + ingest.DLQSuffix
}

// validateKafka checks kafka: broker addresses, topic names, timeouts and
// the partitions of a created control topic.
func (c *Config) validateKafka(bad func(string, string, ...any)) {
	// That there are brokers, that the topics and the group are set and
	// the compression known ingest.Config.Validate checks (validateIngest);
	// here what the address and topic names must be.
	for i, b := range c.Kafka.Brokers {
		if b != "" && !hostPort(b) {
			bad(fmt.Sprintf("kafka.brokers[%d]", i), "%q is not host:port", b)
		}
	}
	if c.Kafka.ControlTopic != "" {
		if err := kafka.CheckTopic(c.Kafka.ControlTopic); err != nil {
			bad("kafka.control_topic", "%v", err)
		} else if err := kafka.CheckTopic(c.Kafka.DLQ()); err != nil && c.Kafka.DLQTopic == "" {
			bad("kafka.control_topic", "the dead-letter topic named after it (kafka.dlq_topic's default): %v", err)
		}
	}
	if c.Kafka.DLQTopic != "" {
		if err := kafka.CheckTopic(c.Kafka.DLQTopic); err != nil {
			bad("kafka.dlq_topic", "%v", err)
		}
	}
	if c.Kafka.SessionTimeout < time.Second {
		bad("kafka.session_timeout", "must be at least 1s")
	}
	if c.Kafka.MetadataMaxAge != 0 && c.Kafka.MetadataMaxAge < time.Second {
		bad("kafka.metadata_max_age", "must be 0 (default) or at least 1s")
	}
	if c.Kafka.ControlPartitions < 1 || c.Kafka.ControlPartitions > MaxControlPartitions {
		bad("kafka.control_partitions", "must be 1 to %d, got %d", MaxControlPartitions, c.Kafka.ControlPartitions)
	}
}

// hostPort reports whether a is host:port with a port from 1 to 65535 (a
// Kafka broker address).
func hostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// MaxControlPartitions bounds kafka.control_partitions (and dev's
// --partitions): the partition count bounds how many instances share
// the work, and no deployment runs a thousand; beyond that a created
// topic only costs (each partition is files on every broker, a fetch
// slot of every instance, and with dev a directory of segment files
// the embedded broker opens at start).
const MaxControlPartitions = 1000
