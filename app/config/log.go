package config

import (
	"strings"
)

// Log configures log/slog.
type Log struct {
	Level  string `yaml:"level" env:"EVENTCENTER_LOG_LEVEL"`
	Format string `yaml:"format" env:"EVENTCENTER_LOG_FORMAT"`
}

// validateLog checks log.
func (c *Config) validateLog(bad func(string, string, ...any)) {
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "want text or json, got %q", c.Log.Format)
	}
}
