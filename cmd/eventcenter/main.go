package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"

	"github.com/eventcenter/eventcenter/admin/cli"
	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/cliflags"
	"github.com/eventcenter/eventcenter/internal/progress"
	"github.com/eventcenter/eventcenter/internal/shutdown"
	"github.com/eventcenter/eventcenter/internal/version"
	"github.com/eventcenter/eventcenter/tracing"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "eventcenter",
		Short:         "A reliable transactional-message center committed through Kafka",
		SilenceUsage:  true,
		SilenceErrors: false,
		Long: `eventcenter keeps transactional messages (PREPARE, then COMMIT or ROLLBACK on a
Kafka control topic), checks back with producers on stale prepares, and forwards
committed messages to Kafka or RocketMQ.

Configuration precedence, lowest first: built-in defaults, the YAML file
(--config), EVENTCENTER_* environment variables, command-line flags.`,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Every command but admin's (which checks its own) refuses negative
	// counts and durations before it runs, naming the flag.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return cliflags.Check(cmd.Flags(), flagRules)
	}
	root.AddCommand(newServe(), newDev(), newMigrate(), newMoveBuckets(), newVersion(), newHealthcheck(), newPartitionFor(), cli.NewCommand())
	return root
}

// flagRules are the numeric flags that need more than "not negative": dev's
// partition count must be at least 1. (bench and soak live in cmd/ectools.)
var flagRules = cliflags.Rules{
	Min: map[string]float64{"partitions": 1},
}

// flags shared by serve and dev that override the configuration.
type overrides struct {
	httpListen string
	logLevel   string
	logFormat  string
}

func (o *overrides) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.httpListen, "http-listen", "", "admin API, /ui, /metrics and health address (overrides http.listen)")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error (overrides log.level)")
	cmd.Flags().StringVar(&o.logFormat, "log-format", "", "text or json (overrides log.format)")
}

func (o *overrides) apply(cfg *config.Config) {
	if o.httpListen != "" {
		cfg.HTTP.Listen = o.httpListen
		cfg.SetByFlag("http.listen", "--http-listen")
	}
	if o.logLevel != "" {
		cfg.Log.Level = o.logLevel
		cfg.SetByFlag("log.level", "--log-level")
	}
	if o.logFormat != "" {
		cfg.Log.Format = o.logFormat
		cfg.SetByFlag("log.format", "--log-format")
	}
}

func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.Level)))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// runCenter runs a center until ctx ends, then stops it in order.
//
// Tracing is configured by the OTEL_* variables (tracing.FromEnv);
// spans still buffered are flushed after the center stopped.
func runCenter(ctx context.Context, cfg config.Config, opt center.Options, ready func(*center.Center)) error {
	if opt.TracerProvider == nil {
		tp, err := tracing.FromEnv(ctx)
		if err != nil {
			return fmt.Errorf("tracing: %w", err)
		}
		if tp != nil {
			opt.TracerProvider = tp
			// The exporter reports failed exports (a collector down or
			// refusing) to OpenTelemetry's error handler: into the log.
			log := opt.Logger
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: export failed", "err", err) }))
			defer func() {
				flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := tp.Shutdown(flushCtx); err != nil {
					opt.Logger.Warn("tracing: flushing spans failed", "err", err)
				}
			}()
		}
	}
	c, err := center.New(ctx, cfg, opt)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready(c)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.Stop(stopCtx); err != nil {
		return err
	}
	opt.Logger.Info("eventcenter stopped")
	return nil
}

func newServe() *cobra.Command {
	var path string
	var o overrides
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the center against real Kafka and PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return err
			}
			o.apply(&cfg)
			if err := cfg.Validate(); err != nil {
				return err
			}
			log := newLogger(cfg.Log, cmd.ErrOrStderr())
			ctx, cancel := shutdown.SignalContext(cmd.Context(), log)
			defer cancel()
			return runCenter(ctx, cfg, center.Options{Logger: log}, nil)
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "eventcenter.yaml", "configuration file (YAML)")
	o.register(cmd)
	return cmd
}

func newMigrate() *cobra.Command {
	var path string
	var plan bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations of this version (online: centers may keep running)",
		Long: `Apply the database migrations of this version. Centers of this version and the
previous one may keep running meanwhile: every statement waits at most a second
for a lock and is tried again, and PostgreSQL indexes are built CONCURRENTLY
(progress is printed). --plan prints the pending steps, what each locks and
how long it is expected to take, and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return err
			}
			if plan {
				if err := center.MigratePlan(cmd.Context(), cfg.Store, cmd.OutOrStdout()); err != nil {
					return fmt.Errorf("migrate --plan: %w", err)
				}
				return nil
			}
			log := newLogger(cfg.Log, cmd.ErrOrStderr())
			pr := newProgressPrinter(cmd.OutOrStdout(), progress.Options{})
			if err := center.MigrateWithProgress(cmd.Context(), cfg.Store, log, pr.report); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			_, _ = fmt.Fprintf(cmd.OutOrStdout(), "migrated %s store\n", cfg.Store.Driver)
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "eventcenter.yaml", "configuration file (YAML)")
	cmd.Flags().BoolVar(&plan, "plan", false, "print the pending steps, their locks and expected durations; change nothing")
	return cmd
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			_, _ = fmt.Fprintf(cmd.OutOrStdout(), "eventcenter %s (commit %s, %s)\n", version.Version, version.Commit, version.GoVersion())
		},
	}
}

func newHealthcheck() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the center's health endpoint answers 200 (for container health checks)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client := &http.Client{Timeout: 3 * time.Second}
			resp, err := client.Get(url)
			if err != nil {
				return fmt.Errorf("healthcheck: %w", err)
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080/healthz", "health endpoint")
	return cmd
}
