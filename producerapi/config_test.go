package producerapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// DefaultConfig is what New makes of a zero Config, and a default Config
// with a producer and a store is valid.
func TestDefaultConfigIsNewsDefaults(t *testing.T) {
	t.Parallel()
	var zero Config
	zero.setDefaults()
	d := DefaultConfig()
	require.Equal(t, envelope.DefaultControlTopic, d.ControlTopic)
	for _, c := range []Config{d, zero, Config{}.WithDefaults()} {
		require.InDelta(t, DefaultRate, c.Rate, 0)
		require.Equal(t, DefaultBurst, c.Burst)
		require.Equal(t, DefaultMaxBatch, c.MaxBatch)
		require.Equal(t, DefaultMaxBatchBytes, c.MaxBatchBytes)
		require.Equal(t, DefaultMaxConcurrent, c.MaxConcurrent)
		require.Equal(t, DefaultProduceTimeout, c.ProduceTimeout)
		require.Equal(t, envelope.DefaultMaxPayload, c.MaxPayload)
		require.Equal(t, ingest.DefaultMaxDelay, c.MaxDelay)
		require.NotNil(t, c.Now)
		require.NotNil(t, c.Logger)
	}
	d.Producer, d.Store = &fakeProducer{}, &fakeStore{}
	require.NoError(t, d.Validate())
}

// Every problem Validate finds names its field, so that app/config can
// report it under the setting's name.
func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	ok := func() Config {
		c := DefaultConfig()
		c.Producer, c.Store = &fakeProducer{}, &fakeStore{}
		return c
	}
	for _, tc := range []struct {
		field, text string
		mut         func(*Config)
	}{
		{"Producer", "is required", func(c *Config) { c.Producer = nil }},
		{"Store", "is required", func(c *Config) { c.Store = nil }},
		{"Rate", "must be positive (envelopes per second per token), got 0", func(c *Config) { c.Rate = 0 }},
		{"Burst", "must be at least 1, got 0", func(c *Config) { c.Burst = 0 }},
		{"MaxBatch", "must be at least 1, got -1", func(c *Config) { c.MaxBatch = -1 }},
		{"MaxBatchBytes", "must be positive, got 0", func(c *Config) { c.MaxBatchBytes = 0 }},
		{"MaxBatchBytes", "must be at least MaxPayload + 64 KiB (65586), to fit a batch of one largest envelope, got 65585",
			func(c *Config) { c.MaxPayload, c.MaxBatchBytes = 50, 50+ingest.RecordOverhead-1 }},
		{"MaxConcurrent", "must be at least 1, got 0", func(c *Config) { c.MaxConcurrent = 0 }},
		{"MaxPayload", "must be at least 1, got 0", func(c *Config) { c.MaxPayload = 0 }},
		{"ProduceTimeout", "must be positive, got 0s", func(c *Config) { c.ProduceTimeout = 0 }},
		{"MaxDelay", "must be positive, got -1s", func(c *Config) { c.MaxDelay = -time.Second }},
	} {
		c := ok()
		tc.mut(&c)
		problems, others := fieldcheck.Problems(c.Validate())
		require.Empty(t, others, tc.field)
		require.Equal(t, []*fieldcheck.Problem{{Field: tc.field, Text: tc.text}}, problems, tc.field)
	}
	c := ok()
	c.MaxPayload, c.MaxBatchBytes = 50, 50+ingest.RecordOverhead
	require.NoError(t, c.Validate(), "a batch of one largest envelope fits exactly")
}

// New gives zero fields their defaults and refuses what it always
// refused (a missing producer or store, a negative limit), but takes a
// batch limit smaller than one largest envelope: such a batch is refused
// 413 like any batch over the limit.
func TestNewRefusesNegativeLimits(t *testing.T) {
	t.Parallel()
	base := Config{Producer: &fakeProducer{}, Store: &fakeStore{}}
	_, err := New(base)
	require.NoError(t, err)
	for field, mut := range map[string]func(*Config){
		"Producer":       func(c *Config) { c.Producer = nil },
		"Store":          func(c *Config) { c.Store = nil },
		"Rate":           func(c *Config) { c.Rate = -1 },
		"Burst":          func(c *Config) { c.Burst = -1 },
		"MaxBatch":       func(c *Config) { c.MaxBatch = -1 },
		"MaxBatchBytes":  func(c *Config) { c.MaxBatchBytes = -1 },
		"MaxConcurrent":  func(c *Config) { c.MaxConcurrent = -1 },
		"MaxPayload":     func(c *Config) { c.MaxPayload = -1 },
		"ProduceTimeout": func(c *Config) { c.ProduceTimeout = -time.Second },
		"MaxDelay":       func(c *Config) { c.MaxDelay = -time.Second },
	} {
		c := base
		mut(&c)
		_, err := New(c)
		require.ErrorContains(t, err, "producerapi config: "+field+":", field)
	}
	small := base
	small.MaxPayload, small.MaxBatchBytes = 50, 400
	_, err = New(small)
	require.NoError(t, err)
	require.Error(t, small.WithDefaults().Validate())
}
