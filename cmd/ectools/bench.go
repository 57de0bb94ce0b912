package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/bench"
	"github.com/eventcenter/eventcenter/internal/shutdown"
)

func newBench() *cobra.Command {
	cfg := bench.Default()
	var jsonPath, htmlPath, cpuProfile, memProfile, logLevel string
	var noFreshWait bool
	var fairCheckback *fairCheckbackFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the center: load through clientlib, commit-to-forward latency, baselines",
		Long: `bench drives producers through clientlib (PREPARE, then COMMIT, ROLLBACK, or nothing
for messages left to the check-back server the tool runs, which answers commit),
consumes the business topic and measures forwarded messages per second,
commit-to-forward latency (p50, p90, p99, max) and, separately, check-back
resolution (prepare to forwarded).

By default everything runs in this process: kfake, the center (through the same
code as "serve") and the load; with --store postgres a fresh schema is created in
--dsn and dropped at the end. --brokers uses external brokers; --external also
assumes a center already runs against them.

Before the center runs, two baselines are measured on the same broker and
database with the same payloads: transport (produce + consume, no center) and
store (the lifecycle writes in batches of 1,000, no center). The report gives
the center's throughput as a ratio of the lower one (--baselines=false skips).

--scheduled N puts N committed scheduled messages in the center's store before the
load (through the center's ingest conversion and store, not through Kafka), due
after the run: a backlog the load flows past. With --scheduled-due-rate R they
fall due at R/s instead, and the report gives their delivery lateness (the
center's produce minus deliver-at) next to the load's latency.

--target rocketmq forwards to the wire-level RocketMQ stand-in, started in this
process, instead of the business topic on Kafka (the load still reaches the
center through Kafka).

A progress line per second goes to stderr, the table to stdout.`,
		Example: `  ectools bench --messages 100000
  ectools bench --store postgres --dsn postgres://postgres@127.0.0.1:5432/test --messages 200000 --json run.json
  ectools bench --store postgres --dsn ... --checkback-ratio 1 --messages 100000 --baselines=false
  ectools bench --store postgres --dsn ... --duration 10m --rate 8000
  ectools bench --via http --messages 20000 --baselines=false --json via-http.json
  ectools bench --messages 20000 --html report.html
  ectools bench --store postgres --dsn ... --duration 30s --rate 10000 --scheduled 1000000 --baselines=false
  ectools bench --store postgres --dsn ... --messages 0 --scheduled 1000000 --scheduled-due-rate 10000 --baselines=false
  ectools bench --store postgres --dsn ... --baselines=false --flood-messages 200000 --quiet-rate 200
  ectools bench --store postgres --dsn ... --baselines=false --messages 20000 --hot-key --target rocketmq`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			cfg.Progress = cmd.ErrOrStderr()
			if noFreshWait {
				cfg.Noisy.QuietLaneFreshFetchWait = -1
			}
			if fairCheckback.on {
				return fairCheckback.run(cmd, cfg, jsonPath)
			}
			if !cmd.Flags().Changed("messages") && cfg.Duration > 0 {
				cfg.Messages = 0
			}
			var closers []io.Closer
			defer func() {
				for _, c := range closers {
					_ = c.Close()
				}
			}()
			create := func(path string) (io.Writer, error) {
				f, err := os.Create(path)
				if err != nil {
					return nil, err
				}
				closers = append(closers, f)
				return f, nil
			}
			var err error
			if cpuProfile != "" {
				if cfg.CPUProfile, err = create(cpuProfile); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
			}
			if memProfile != "" {
				if cfg.MemProfile, err = create(memProfile); err != nil {
					return fmt.Errorf("--memprofile: %w", err)
				}
			}
			ctx, cancel := shutdown.SignalContext(cmd.Context(), cfg.Logger)
			defer cancel()
			rep, err := bench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := rep.WriteViaTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := rep.WriteNoisyTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if jsonPath != "" {
				f, err := os.Create(jsonPath)
				if err != nil {
					return fmt.Errorf("--json: %w", err)
				}
				if err := errors.Join(rep.WriteJSON(f), f.Close()); err != nil {
					return fmt.Errorf("--json: %w", err)
				}
			}
			if htmlPath != "" {
				if err := writeFile(htmlPath, rep.WriteHTML); err != nil {
					return fmt.Errorf("--html: %w", err)
				}
			}
			if rep.Center.Missing > 0 {
				return fmt.Errorf("%d messages were not forwarded within --drain-timeout", rep.Center.Missing)
			}
			if s := rep.Scheduled; s != nil && (s.Missing > 0 || s.Duplicates > 0 || s.Early > 0) {
				return fmt.Errorf("scheduled messages: %d missing, %d duplicates, %d sent before their deliver-at", s.Missing, s.Duplicates, s.Early)
			}
			if s := rep.Scheduled; s != nil && s.DueRate == 0 && s.Forwarded > 0 {
				return fmt.Errorf("%d held scheduled messages were forwarded before their time", s.Forwarded)
			}
			if rep.Via != nil && rep.Via.HTTP.Missing > 0 {
				return fmt.Errorf("through the producer API: %d messages were not forwarded within --drain-timeout", rep.Via.HTTP.Missing)
			}
			return nil
		},
	}
	f := cmd.Flags()
	fairCheckback = addFairCheckbackFlags(f)
	f.IntVar(&cfg.Messages, "messages", cfg.Messages, "messages to send (with --duration and no --messages: bounded by time only)")
	f.DurationVar(&cfg.Duration, "duration", 0, "how long to send (0: until --messages are sent)")
	f.Float64Var(&cfg.Rate, "rate", 0, "target messages/s over all producers (0: as fast as possible)")
	f.IntVar(&cfg.Payload, "payload", cfg.Payload, "payload bytes")
	f.IntVar(&cfg.OrderKeys, "order-keys", 0, "give messages order keys: message i gets key i mod N (0: none; order is kept with the postgres store)")
	f.BoolVar(&cfg.HotKey, "hot-key", false, "give every message the same order key")
	f.StringVar(&cfg.Target, "target", cfg.Target, "the embedded center's forward target: kafka (the business topic on the brokers), or rocketmq: the RocketMQ stand-in in process, one queue per partition, read back from its memory (the plain load only: not with --external, --via http, --scheduled or --flood-messages)")
	f.StringVar(&cfg.ForwardKey, "forward-key", cfg.ForwardKey, "with --order-keys or --hot-key, the forward (Kafka) key of a message: order (its order key, one partition per key, a key's run pipelined) or message (its own key, spread over the partitions, a run sent head of line)")
	f.IntVar(&cfg.Scheduled, "scheduled", 0, "hold this many committed scheduled messages in the center's store (written through the center's ingest conversion and store, not through Kafka), due after the run unless --scheduled-due-rate")
	f.Float64Var(&cfg.ScheduledDueRate, "scheduled-due-rate", 0, "the --scheduled messages fall due at this rate (msg/s) and the report gives their delivery lateness (0: held)")
	f.DurationVar(&cfg.ScheduledLead, "scheduled-lead", 0, "with --scheduled-due-rate: when the first falls due, from the start of the seeding (0: 20s plus 1s per 20,000 messages)")
	f.DurationVar(&cfg.ScanInterval, "scan-interval", 0, "embedded center: forward.scan_interval (0: its default, 1s), which bounds the lateness of scheduled messages")
	f.IntVar(&cfg.Producers, "producers", cfg.Producers, "clientlib producers (Kafka clients)")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "goroutines sending through each producer")
	f.Float64Var(&cfg.RollbackRatio, "rollback-ratio", 0, "share of messages rolled back")
	f.Float64Var(&cfg.CheckbackRatio, "checkback-ratio", 0, "share of messages left PREPARED for check-back (answered commit)")
	f.StringVar(&cfg.Store, "store", cfg.Store, "sqlite, postgres, mysql or sharded (--dsn: PostgreSQL URLs separated by commas)")
	f.StringVar(&cfg.DSN, "dsn", "", "PostgreSQL URL (a fresh schema is created and dropped) or SQLite file (default: a temporary file)")
	f.IntVar(&cfg.StoreMaxConns, "store-max-conns", cfg.StoreMaxConns, "the center's store.max_conns (PostgreSQL)")
	f.StringSliceVar(&cfg.Brokers, "brokers", nil, "external Kafka brokers (default: kfake in process)")
	f.BoolVar(&cfg.External, "external", false, "a center already runs against --brokers: only produce, answer check-backs and consume")
	f.StringVar(&cfg.ControlTopic, "control-topic", cfg.ControlTopic, "control topic")
	f.StringVar(&cfg.Topic, "topic", "", "business topic (default: a fresh bench.<run id>, bench_<run id> with --target rocketmq)")
	f.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the topics the tool creates")
	f.StringVar(&cfg.CheckbackListen, "checkback-listen", cfg.CheckbackListen, "address of the tool's check-back server")
	f.StringVar(&cfg.CheckbackURL, "checkback-url", "", "check-back endpoint named in messages (default: http://<checkback-listen>/check)")
	f.StringVar(&cfg.CheckbackZooKeeper, "checkback-zookeeper", "", "register the check-back server in this ZooKeeper (host:port) as a Dubbo Triple provider and name it by the registry: zookeeper://<it>/ecbench.Checker?protocol=tri")
	f.DurationVar(&cfg.FirstDelay, "checkback-first-delay", cfg.FirstDelay, "embedded center: checkback.first_delay (default: 100ms with --checkback-ratio, else the center's 30s)")
	f.IntVar(&cfg.CheckbackConcurrency, "checkback-concurrency", cfg.CheckbackConcurrency, "embedded center: checkback.endpoint_concurrency")
	f.IntVar(&cfg.CheckbackWorkers, "checkback-workers", cfg.CheckbackWorkers, "embedded center: checkback.workers")
	f.BoolVar(&cfg.Baselines, "baselines", cfg.Baselines, "measure the transport and store baselines first")
	f.StringVar(&cfg.Via, "via", cfg.Via, "kafka, or http: run the load through Kafka producers, then the same through the producer HTTP API, and compare (messages/s, p99 prepare-to-forward)")
	f.BoolVar(&cfg.Tracing, "tracing", false, "embedded center: OpenTelemetry tracing on (spans exported to a discard exporter), messages sent from producer spans")
	f.IntVar(&cfg.StoreWriters, "store-writers", 0, "writers of the store baseline (default 2 on PostgreSQL, 1 on SQLite)")
	f.DurationVar(&cfg.BrokerRetention, "broker-retention", cfg.BrokerRetention, "retention.ms of the topics the tool creates (kfake keeps records in memory: keep it short in long runs)")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "how long to wait for forwards after sending ended")
	f.DurationVar(&cfg.HeapEvery, "heap-every", cfg.HeapEvery, "interval of heap samples (after GC) in the JSON report")
	noisyFlags(f, &cfg.Noisy, &noFreshWait)
	cmd.AddCommand(newBenchCompare())
	f.StringVar(&jsonPath, "json", "", "write the report as JSON to this file")
	f.StringVar(&htmlPath, "html", "", "write the report as one self-contained HTML page (charts over the run, CPU, baselines, configuration) to this file")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the center phase to this file")
	f.StringVar(&memProfile, "memprofile", "", "write a heap profile at the end of the center phase to this file")
	f.StringVar(&logLevel, "log-level", "warn", "log level of the center and clients (stderr)")
	return cmd
}
