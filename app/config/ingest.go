package config

import (
	"time"
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

// validateIngest checks ingest.
func (c *Config) validateIngest(bad func(string, string, ...any)) {
	if c.Ingest.MaxPayloadBytes < 1 || c.Ingest.MaxPayloadBytes > MaxPayloadBytes {
		bad("ingest.max_payload_bytes", "must be 1 to %d", MaxPayloadBytes)
	}
	if c.Ingest.DLQRetryBudget < 0 {
		bad("ingest.dlq_retry_budget", "must not be negative (0 means 30s)")
	}
	if c.Ingest.SendLease < time.Second {
		bad("ingest.send_lease", "must be at least 1s")
	}
	if c.Ingest.Parallelism < 1 {
		bad("ingest.parallelism", "must be at least 1")
	}
	if c.Ingest.MinApplyRecords < 1 {
		bad("ingest.min_apply_records", "must be at least 1")
	}
	if c.Ingest.FreshFetchWait >= time.Second {
		bad("ingest.fresh_fetch_wait", "must be under 1s (it delays every batch that waits in full; negative: no wait)")
	}
}

// MaxPayloadBytes is the largest ingest.max_payload_bytes
// (ingest.MaxMaxPayload).
const MaxPayloadBytes = 1<<30 - 64<<10 - 8<<10
