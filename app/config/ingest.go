package config

import (
	"time"

	"github.com/eventcenter/eventcenter/ingest"
)

// Ingest tunes the control-topic consumer.
type Ingest struct {
	MaxPayloadBytes int           `yaml:"max_payload_bytes" env:"EVENTCENTER_INGEST_MAX_PAYLOAD_BYTES"`
	SendLease       time.Duration `yaml:"send_lease" env:"EVENTCENTER_INGEST_SEND_LEASE"`
	// Parallelism bounds the store transactions applying one poll at once;
	// MinApplyRecords is the fewest records of a poll given a transaction
	// of their own (a light poll is one transaction).
	Parallelism     int `yaml:"parallelism" env:"EVENTCENTER_INGEST_PARALLELISM"`
	MinApplyRecords int `yaml:"min_apply_records" env:"EVENTCENTER_INGEST_MIN_APPLY_RECORDS"`
	// FreshFetchWait is how long a poll that found a fetch buffered waits
	// for the next one (when the previous poll brought more than one
	// record), so that a batch also takes what reached the broker while
	// the previous one was applied; negative means no wait.
	FreshFetchWait time.Duration `yaml:"fresh_fetch_wait" env:"EVENTCENTER_INGEST_FRESH_FETCH_WAIT"`
	// DLQRetryBudget bounds how long a dead-letter write is retried after
	// transient errors before the record is written without its value (and
	// as long again before it is dropped and counted); 0 means 30s.
	DLQRetryBudget time.Duration `yaml:"dlq_retry_budget" env:"EVENTCENTER_INGEST_DLQ_RETRY_BUDGET"`
}

// MaxFreshFetchWait bounds ingest.fresh_fetch_wait and each lane's: the
// wait delays every batch that waits in full.
const MaxFreshFetchWait = time.Second

// ingestPaths are the settings behind ingest.Config's fields.
var ingestPaths = fieldPaths{
	"Brokers":         "kafka.brokers",
	"ControlTopic":    "kafka.control_topic",
	"DLQTopic":        "kafka.dlq_topic",
	"Group":           "kafka.group",
	"DLQCompression":  "kafka.compression",
	"MaxPayload":      "ingest.max_payload_bytes",
	"Parallelism":     "ingest.parallelism",
	"MinApplyRecords": "ingest.min_apply_records",
	"FreshFetchWait":  "ingest.fresh_fetch_wait",
	"DLQRetryBudget":  "ingest.dlq_retry_budget",
	"MaxDelay":        "forward.max_delay",
}

// IngestConfig is the default lane's ingest.Config as the settings make
// it (ingestPaths): ingest's defaults, then kafka.*, ingest.* and
// forward.max_delay. What is not a setting (clients, callbacks, the
// clock, the logger) the center adds.
func (c *Config) IngestConfig() ingest.Config {
	ic := ingest.DefaultConfig()
	ic.Brokers = c.Kafka.Brokers
	ic.ControlTopic = c.Kafka.ControlTopic
	ic.DLQTopic = c.Kafka.DLQ()
	ic.Group = c.Kafka.Group
	ic.DLQCompression = c.Kafka.Compression
	ic.MaxPayload = c.Ingest.MaxPayloadBytes
	ic.Parallelism = c.Ingest.Parallelism
	ic.MinApplyRecords = c.Ingest.MinApplyRecords
	ic.FreshFetchWait = c.Ingest.FreshFetchWait
	ic.DLQRetryBudget = c.Ingest.DLQRetryBudget
	ic.MaxDelay = c.Forward.MaxDelay
	ic.OrderByForwardKey = c.Forward.Order.ByForwardKey
	return ic
}

// validateIngest checks ingest: ingest.Config.Validate's limits under the
// settings' names, and what only the binary has.
func (c *Config) validateIngest(bad func(string, string, ...any)) {
	ic := c.IngestConfig()
	ingestPaths.report("ingest", ic.Validate(), bad)
	if c.Ingest.SendLease < time.Second {
		bad("ingest.send_lease", "must be at least 1s")
	}
	if c.Ingest.FreshFetchWait >= MaxFreshFetchWait {
		bad("ingest.fresh_fetch_wait", "must be under %s (it delays every batch that waits in full; negative: no wait)", MaxFreshFetchWait)
	}
}
