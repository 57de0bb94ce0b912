package soak

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config is one soak run.
type Config struct {
	// Duration is how long producers send and faults are injected.
	Duration time.Duration
	// Rate is messages per second over all producers; 0 means as fast as
	// the producers go.
	Rate int
	// Producers is the number of producer goroutines (default 8).
	Producers int
	// Centers is the number of center processes (default 3).
	Centers int
	// Partitions is the control topic's initial partition count (default 6).
	Partitions int
	// Seed drives every random choice of the run; 0 picks one from the clock.
	Seed int64
	// Faults enables fault injection (off: a clean throughput run).
	Faults bool
	// FaultEvery is the mean time between faults (default 4s).
	FaultEvery time.Duration
	// Settle bounds the wait for the system to converge after the producers
	// stop (default: the check-back schedule plus 90s).
	Settle time.Duration

	// Standby runs PostgreSQL with a streaming standby the soak makes
	// (StandbySync, StandbyAsync; StandbyNone: a primary alone); the
	// centers' DSN lists both with target_session_attrs=read-write and
	// the faults include failovers.
	Standby string
	// StandbyLag delays the standby's replication link (toward the
	// standby) by this much: with StandbyAsync, the standby lags by it.
	StandbyLag time.Duration

	// EventcenterBin is the eventcenter binary (required).
	EventcenterBin string
	// BrokerBin is the ecbroker binary (required).
	BrokerBin string
	// PGBinDir holds initdb and pg_ctl (default /usr/lib/postgresql/15/bin).
	PGBinDir string
	// WorkDir keeps configs, logs and the database; empty makes a temporary
	// directory, removed after a run without violations unless Keep.
	WorkDir string
	Keep    bool

	// faultKinds, when set, limits the faults to these kinds (the fault
	// names of faults.go): a test of one kind of fault.
	faultKinds map[string]bool

	// Out receives the progress and the report (default io.Discard).
	Out    io.Writer
	Logger *slog.Logger
}

// Check-back policy of the centers in a soak; the invariant "no message
// PREPARED beyond its last scheduled check-back" is computed from it.
const (
	checkFirstDelay  = time.Second
	checkBackoffBase = 500 * time.Millisecond
	checkBackoffCap  = 2 * time.Second
	checkTimeout     = time.Second
	checkMaxAttempts = 6
	sessionTimeout   = 6 * time.Second
	sendLease        = 5 * time.Second
	sendTimeout      = 3 * time.Second
)

// scheduleBound is the latest a PREPARE can stay undecided after its
// creation when every check-back is made on time: the first delay, then
// every attempt timing out and backing off at the cap.
func scheduleBound() time.Duration {
	return checkFirstDelay + checkMaxAttempts*(checkTimeout+checkBackoffCap)
}

func (c *Config) setDefaults() {
	if c.Producers == 0 {
		c.Producers = 8
	}
	if c.Centers == 0 {
		c.Centers = 3
	}
	if c.Partitions == 0 {
		c.Partitions = 6
	}
	if c.FaultEvery == 0 {
		c.FaultEvery = 4 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = scheduleBound() + 90*time.Second
	}
	if c.PGBinDir == "" {
		c.PGBinDir = "/usr/lib/postgresql/15/bin"
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(c.Out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, errors.New("soak: Duration must be positive"))
	}
	if c.Rate < 0 {
		errs = append(errs, errors.New("soak: Rate must not be negative"))
	}
	if c.Centers < 1 {
		errs = append(errs, errors.New("soak: Centers must be at least 1"))
	}
	if c.Producers < 1 {
		errs = append(errs, errors.New("soak: Producers must be at least 1"))
	}
	if c.Partitions < 1 {
		errs = append(errs, errors.New("soak: Partitions must be at least 1"))
	}
	if c.Standby != StandbyNone && c.Standby != StandbySync && c.Standby != StandbyAsync {
		errs = append(errs, fmt.Errorf("soak: Standby %q: want %q, %q or none", c.Standby, StandbySync, StandbyAsync))
	}
	if c.StandbyLag < 0 || (c.StandbyLag > 0 && c.Standby == StandbyNone) {
		errs = append(errs, errors.New("soak: StandbyLag needs a standby and must not be negative"))
	}
	if c.EventcenterBin == "" {
		errs = append(errs, errors.New("soak: EventcenterBin is required"))
	}
	if c.BrokerBin == "" {
		errs = append(errs, errors.New("soak: BrokerBin is required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("soak config: %w", errors.Join(errs...))
	}
	return nil
}
