package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/soak"
)

func newSoak() *cobra.Command {
	var cfg soak.Config
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run a cluster soak with faults (ecbroker, a throwaway PostgreSQL, several centers) and check the invariants",
		Long: `soak starts ecbroker (a Kafka-protocol broker in its own process), a throwaway
PostgreSQL cluster (initdb into a temporary directory), --centers "eventcenter serve"
processes, producers through clientlib and a check-back server. With --faults it
injects, at random from the printed seed: SIGKILL and restart of a center,
SIGSTOP/SIGCONT, PostgreSQL restarts, broker produce and fetch errors, check-back
outages, cuts, delays, losses and flaps of one center's link to PostgreSQL, the
broker or the check-back endpoint (through loopback proxies of the soak's), one
center cut from PostgreSQL and the broker at once, one control-topic
partition increase and, with --standby, PostgreSQL failovers (the primary
crashed, the standby promoted, a new standby made from the new primary). At
the end it checks the invariants; the exit status is non-zero when one is violated.

eventcenter and ecbroker are looked up next to this binary, then in PATH
(go build -o bin/ ./cmd/eventcenter ./cmd/ecbroker ./cmd/ectools).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("soak: find this binary: %w", err)
			}
			if cfg.EventcenterBin == "" {
				cfg.EventcenterBin = findBinary(self, "eventcenter")
			}
			if cfg.BrokerBin == "" {
				cfg.BrokerBin = findBinary(self, "ecbroker")
			}
			cfg.Out = cmd.OutOrStdout()
			// Ctrl-C ends the run early; the children are still stopped.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := soak.Run(ctx, cfg)
			if rep != nil {
				_, _ = fmt.Fprint(cmd.OutOrStdout(), rep.String())
			}
			if errors.Is(err, soak.ErrViolation) {
				cmd.SilenceUsage = true
			}
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long producers send and faults are injected")
	f.IntVar(&cfg.Rate, "rate", 200, "messages per second over all producers (0: as fast as they go)")
	f.IntVar(&cfg.Producers, "producers", 8, "producer goroutines")
	f.IntVar(&cfg.Centers, "centers", 3, "center processes")
	f.IntVar(&cfg.Partitions, "partitions", 6, "initial control-topic partitions")
	f.Int64Var(&cfg.Seed, "seed", 0, "random seed (0: from the clock; printed for replay)")
	f.BoolVar(&cfg.Faults, "faults", true, "inject faults")
	f.DurationVar(&cfg.FaultEvery, "fault-every", 4*time.Second, "mean time between faults")
	f.DurationVar(&cfg.Settle, "settle", 0, "how long to wait for convergence after the producers stop (0: check-back schedule + 90s)")
	f.StringVar(&cfg.Standby, "standby", "", `run PostgreSQL with a streaming standby the soak makes, "sync" (--standby alone) or "async" (empty: none); faults then include failovers`)
	f.Lookup("standby").NoOptDefVal = soak.StandbySync
	f.DurationVar(&cfg.StandbyLag, "standby-lag", 0, "delay the standby's replication link by this much (with --standby async: a standby that lags)")
	f.StringVar(&cfg.BrokerBin, "ecbroker", "", "ecbroker binary (default: next to this binary, then PATH)")
	f.StringVar(&cfg.EventcenterBin, "eventcenter", "", "eventcenter binary the centers run (default: next to this binary, then PATH)")
	f.StringVar(&cfg.PGBinDir, "pg-bin", "/usr/lib/postgresql/15/bin", "directory of initdb and pg_ctl")
	f.StringVar(&cfg.WorkDir, "work-dir", "", "keep configs, logs and the database here (default: a temporary directory, kept only on failure)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the temporary directory")
	return cmd
}

// findBinary returns the path of the named binary next to self, else in
// PATH, else the path next to self (for the error the run gives).
func findBinary(self, name string) string {
	next := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(next); err == nil {
		return next
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return next
}
