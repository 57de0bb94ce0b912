package config

import (
	"time"
)

// Retention configures the purge of terminal messages.
type Retention struct {
	Period   time.Duration `yaml:"period" env:"EVENTCENTER_RETENTION_PERIOD"`
	Interval time.Duration `yaml:"interval" env:"EVENTCENTER_RETENTION_INTERVAL"`
	Batch    int           `yaml:"batch" env:"EVENTCENTER_RETENTION_BATCH"`
	// AuditPeriod is how long audit records are kept, whatever became of
	// their message (0 keeps them forever).
	AuditPeriod time.Duration `yaml:"audit_period" env:"EVENTCENTER_RETENTION_AUDIT_PERIOD"`
}

// validateRetention checks retention.
func (c *Config) validateRetention(bad func(string, string, ...any)) {
	if c.Retention.Period < 0 {
		bad("retention.period", "must not be negative (0 keeps everything)")
	}
	if c.Retention.Interval <= 0 {
		bad("retention.interval", "must be positive")
	}
	if c.Retention.Batch < 1 {
		bad("retention.batch", "must be at least 1")
	}
}
