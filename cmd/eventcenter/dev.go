package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/dirlock"
	"github.com/eventcenter/eventcenter/internal/shutdown"
)

type devFlags struct {
	kafkaAddr  string
	dataDir    string
	partitions int
	rocketmq   bool
	allow      []string
	configPath string
	// ingressListen is the producer HTTP API's address ("" turns it off);
	// ingressSet says it was given on the command line (it then wins
	// over --config).
	ingressListen string
	ingressSet    bool
	overrides
}

func newDev() *cobra.Command {
	f := devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the center with everything embedded: a Kafka-protocol broker (kfake) and SQLite",
		Long: `dev runs an in-process Kafka-protocol broker (franz-go's kfake) on --kafka-addr,
keeps its data and the SQLite store under --data-dir (so a restart keeps
everything), creates the control and dead-letter topics, forwards to the same
broker (business topics are created on first use), and serves the admin API,
the console (/ui) and /metrics on --http-listen without authentication, and
the producer HTTP API (POST /v1/messages/{bizID}/{key}/prepare|commit|rollback)
on --ingress-listen without tokens.

With --rocketmq it also starts the project's wire-level RocketMQ stand-in and
configures a forward target named "rocketmq" (use ec-target: rocketmq). The
stand-in is test code: it is only in a binary built with -tags rocketmqfake
(go run -tags rocketmqfake ./cmd/eventcenter dev --rocketmq).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.ingressSet = cmd.Flags().Changed("ingress-listen")
			return runDev(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.kafkaAddr, "kafka-addr", "127.0.0.1:9092", "address of the embedded Kafka-protocol broker")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", ".eventcenter-dev", "directory for the broker's data and the SQLite file")
	cmd.Flags().IntVar(&f.partitions, "partitions", 4, "partitions of the control topic when it is created")
	cmd.Flags().BoolVar(&f.rocketmq, "rocketmq", false, "also start the RocketMQ stand-in as forward target \"rocketmq\"")
	cmd.Flags().StringSliceVar(&f.allow, "allow-checkback", []string{"http://127.0.0.1:8090", "http://localhost:8090"}, "check-back endpoints (origins or URL prefixes) the center may call")
	cmd.Flags().StringVarP(&f.configPath, "config", "c", "", "optional YAML applied over the dev defaults")
	cmd.Flags().StringVar(&f.ingressListen, "ingress-listen", "127.0.0.1:8081", "producer HTTP API address, without tokens (overrides ingress.listen; empty turns it off)")
	f.overrides.register(cmd)
	return cmd
}

func devConfig(f devFlags, brokers []string) (config.Config, error) {
	cfg := config.Default()
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.CreateTopics = true
	if f.partitions > 0 {
		cfg.Kafka.ControlPartitions = f.partitions
	}
	cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(f.dataDir, "eventcenter.db"), MaxConns: 1, AutoMigrate: true}
	cfg.Admin.Insecure = true
	cfg.Forward.Targets = []config.Target{{Name: "kafka", Type: "kafka", AutoCreateTopics: true}}
	cfg.Checkback.Allow = f.allow
	cfg.Checkback.FirstDelay = 5 * time.Second
	cfg.Checkback.BackoffBase = 2 * time.Second
	cfg.Ingress.Listen = f.ingressListen
	cfg.Ingress.Insecure = true
	if f.configPath != "" {
		data, err := os.ReadFile(f.configPath)
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		if err := config.Parse(data, &cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %w", f.configPath, err)
		}
	}
	if err := config.ApplyEnv(&cfg); err != nil {
		return cfg, err
	}
	if f.ingressSet {
		cfg.Ingress.Listen = f.ingressListen
		cfg.SetByFlag("ingress.listen", "--ingress-listen")
	}
	f.overrides.apply(&cfg)
	return cfg, nil
}

func runDev(ctx context.Context, f devFlags, stdout, stderr io.Writer) error {
	if f.partitions < 1 || f.partitions > config.MaxControlPartitions {
		// A partition count bounds how many instances share the work; the
		// embedded broker keeps a directory of files per partition and
		// opens them all at start, so 100,000 took minutes for nothing.
		return fmt.Errorf("--partitions: must be 1 to %d (the most instances that can share the control topic), got %d", config.MaxControlPartitions, f.partitions)
	}
	if f.rocketmq && !haveRocketMQStandIn { // before anything is started
		return fmt.Errorf("--rocketmq: %w", errNoRocketMQStandIn)
	}
	// Payloads are kept under the data directory: owner only (0700 and
	// 0600; privateUmask below covers what the broker creates).
	_, statErr := os.Stat(f.dataDir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	_, portText, err := net.SplitHostPort(f.kafkaAddr)
	if err != nil {
		return fmt.Errorf("--kafka-addr: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--kafka-addr: port %q: %w", portText, err)
	}
	// The whole configuration is checked before the broker starts and the
	// SQLite file is created or migrated, with a stand-in for the broker's
	// address, known once it listens (--kafka-addr may say port 0).
	cfg, err := devConfig(f, []string{"127.0.0.1:9092"})
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// One dev per data directory: two would share the SQLite file and the
	// broker's files, and lose messages.
	lock, err := dirlock.Acquire(f.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	defer func() { _ = lock.Release() }()
	restoreUmask := privateUmask()
	defer restoreUmask()
	if err := privateDataDir(f.dataDir, created, cfg.Store); err != nil {
		return err
	}
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DataDir(filepath.Join(f.dataDir, "kafka")),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
		// The broker takes every record a forward target may send, so
		// nothing ingest accepts is refused as too large (Kafka's default
		// message.max.bytes, 1,048,588, is below max_payload_bytes plus
		// headers).
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(devMaxMessageBytes(&cfg))}),
	)
	if err != nil {
		return portInUse(fmt.Errorf("start embedded broker on %s (--kafka-addr): %w", f.kafkaAddr, err))
	}
	defer cluster.Close()
	saveAutoCreatedTopics(cluster)
	brokers := cluster.ListenAddrs()
	cfg.Kafka.Brokers = brokers

	log := newLogger(cfg.Log, stderr)
	if err := createTopics(ctx, brokers, cfg.Kafka.ControlPartitions, cfg.Kafka.ControlTopic, cfg.Kafka.DLQ()); err != nil {
		return err
	}

	var rmqAddr string
	if f.rocketmq {
		addr, stop, err := startRocketMQStandIn()
		if err != nil {
			return fmt.Errorf("start RocketMQ stand-in: %w", err)
		}
		defer stop()
		rmqAddr = addr
		cfg.Forward.Targets = append(cfg.Forward.Targets, config.Target{Name: "rocketmq", Type: "rocketmq", NameServers: []string{addr}})
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	ctx, cancel := shutdown.SignalContext(ctx, log)
	defer cancel()
	return portInUse(runCenter(ctx, cfg, center.Options{Logger: log}, func(c *center.Center) {
		printWelcome(stdout, cfg, f.dataDir, c.Addr(), c.IngressAddr(), rmqAddr)
	}))
}

// portInUse adds to an "address already in use" error the flags that move
// dev to other ports: a second dev (on another --data-dir) collides on all
// three of them.
func portInUse(err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	return fmt.Errorf("%w\n(another eventcenter dev, or another server, has that port: give this dev free ports with "+
		"--kafka-addr, --http-listen and --ingress-listen, e.g. --kafka-addr 127.0.0.1:19092 --http-listen 127.0.0.1:18080 --ingress-listen 127.0.0.1:18081)", err)
}

// privateDataDir makes the data directory and what an earlier dev (which
// wrote 0755 and 0644) left in it readable by the owner only: the
// directory itself when dev created it or it holds dev's files (a
// directory of the user's, say --data-dir ., is left as it is), the
// broker's tree and the SQLite files.
func privateDataDir(dir string, created bool, st config.Store) error {
	kafkaDir := filepath.Join(dir, "kafka")
	_, kerr := os.Stat(kafkaDir)
	_, dberr := os.Stat(filepath.Join(dir, "eventcenter.db"))
	if created || kerr == nil || dberr == nil {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	private := func(path string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			return os.Chmod(path, perm&^0o077)
		}
		return nil
	}
	err := filepath.WalkDir(kafkaDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return private(path, d)
	})
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if st.Driver == "sqlite" {
		files, _ := filepath.Glob(st.DSN + "*") // the file, -wal, -shm
		for _, path := range files {
			info, err := os.Lstat(path)
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			if err := private(path, fs.FileInfoToDirEntry(info)); err != nil {
				return fmt.Errorf("data dir: %w", err)
			}
		}
	}
	return nil
}

// saveAutoCreatedTopics makes every topic the embedded broker creates on a
// metadata request survive a kill -9. kfake creates such topics in memory
// and writes its topic list only on a clean shutdown (it does write it for
// CreateTopics), so after a crash an auto-created topic came back empty at
// offset 0 over its old segment files: forwarded messages were lost and
// readers failed to decode the partition. This hook creates each topic a
// metadata request may auto-create through kfake's admin path first, which
// saves the topic list at once; the request is then answered as usual.
func saveAutoCreatedTopics(cluster *kfake.Cluster) {
	var mu sync.Mutex
	known := map[string]bool{} // created or found existing by this process
	cluster.ControlKey(kmsg.Metadata.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		mreq, ok := req.(*kmsg.MetadataRequest)
		if !ok || !mreq.AllowAutoTopicCreation {
			return nil, nil, false
		}
		for _, rt := range mreq.Topics {
			if rt.Topic == nil || *rt.Topic == "" {
				continue
			}
			name := *rt.Topic
			mu.Lock()
			done := known[name]
			mu.Unlock()
			if done {
				continue
			}
			var err error
			// The control function runs on the cluster's loop: CreateTopic
			// (which queues work on that loop) must run while it sleeps.
			cluster.SleepControl(func() { err = cluster.CreateTopic(name, -1, nil) })
			if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
				mu.Lock()
				known[name] = true
				mu.Unlock()
			}
			// Other errors (an invalid name) are left to the metadata
			// request, which answers them as Kafka would.
		}
		return nil, nil, false
	})
	// A deleted topic may be auto-created again later.
	cluster.ControlKey(kmsg.DeleteTopics.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if dreq, ok := req.(*kmsg.DeleteTopicsRequest); ok {
			mu.Lock()
			for _, t := range dreq.Topics {
				if t.Topic != nil {
					delete(known, *t.Topic)
				}
			}
			for _, t := range dreq.TopicNames {
				delete(known, t)
			}
			mu.Unlock()
		}
		return nil, nil, false
	})
}

// devMaxMessageBytes is the largest record a Kafka forward target of cfg
// may send.
func devMaxMessageBytes(cfg *config.Config) int {
	n := cfg.MessageBytes(config.Target{Type: "kafka"})
	for _, t := range cfg.Forward.Targets {
		if t.Type == "kafka" {
			n = max(n, cfg.MessageBytes(t))
		}
	}
	return n
}

func createTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	existing, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for _, t := range topics {
		if existing.Has(t) {
			continue
		}
		resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, t)
		if err != nil {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
		if resp.Err != nil {
			return fmt.Errorf("create topic %s: %w", t, resp.Err)
		}
	}
	return nil
}

// printWelcome tells where everything runs; ingressAddr is the producer
// API's address, empty when it is off; rmqAddr is the RocketMQ stand-in's
// name server, empty without --rocketmq. It never prints a secret: the
// store's DSN is shown with its password redacted.
func printWelcome(w io.Writer, cfg config.Config, dataDir, httpAddr, ingressAddr, rmqAddr string) {
	_, _ = fmt.Fprintf(w, `eventcenter dev is running.

  %-16s %[2]s   control topic %[3]s, dead letters %[4]s
  %-16[5]s %[6]s
  Console:         http://%[7]s/ui/
  Admin API:       http://%[7]s/api/v1/messages
  Metrics:         http://%[7]s/metrics
`, "Kafka (kfake):", cfg.Kafka.Brokers[0], cfg.Kafka.ControlTopic, cfg.Kafka.DLQ(),
		"Store ("+config.DriverName(cfg.Store.Driver)+"):", cfg.Store.Describe(), httpAddr)
	if ingressAddr != "" {
		_, _ = fmt.Fprintf(w, "  Producer API:    http://%s/v1/ (no Kafka client needed; OpenAPI at /v1/openapi.json)\n", ingressAddr)
	}
	if rmqAddr != "" {
		_, _ = fmt.Fprintf(w, "  RocketMQ:        name server %s (forward target \"rocketmq\")\n", rmqAddr)
	}
	_, _ = fmt.Fprintf(w, `
Send a transactional message with kcat:
  echo 'hello'  | kcat -P -b %[1]s -t %[2]s -k 'orders:o-1' -H ec-type=prepare -H ec-biz=orders -H ec-key=o-1 -H ec-topic=orders.events -H ec-fkey=o-1
  echo 'commit' | kcat -P -b %[1]s -t %[2]s -k 'orders:o-1' -H ec-type=commit -H ec-biz=orders -H ec-key=o-1
  kcat -C -b %[1]s -t orders.events -o beginning -e -f 'key=%%k headers=%%h value=%%s\n'
`, cfg.Kafka.Brokers[0], cfg.Kafka.ControlTopic)
	if ingressAddr != "" {
		_, _ = fmt.Fprintf(w, `
Or over HTTP, without a Kafka client:
  curl -X POST http://%[1]s/v1/messages/orders/o-2/prepare -H 'ec-topic: orders.events' -H 'ec-fkey: o-2' -d 'hello'
  curl -X POST http://%[1]s/v1/messages/orders/o-2/commit
  curl http://%[1]s/v1/messages/orders/o-2
`, ingressAddr)
	}
	_, _ = fmt.Fprintf(w, "\nPress Ctrl-C to stop (%s).\n", whereDataStays(cfg.Store, dataDir))
}

// whereDataStays says where dev keeps its data: the data directory (the
// broker's files, and the SQLite file when it is there) and otherwise the
// store, named by its driver only.
func whereDataStays(st config.Store, dataDir string) string {
	if st.Driver == "sqlite" {
		if rel, err := filepath.Rel(dataDir, st.DSN); err == nil && filepath.IsLocal(rel) {
			return "the data stays in " + dataDir
		}
		return "the data stays in " + dataDir + " and " + st.Describe()
	}
	return "the broker's data stays in " + dataDir + ", the messages in the " + config.DriverName(st.Driver) + " store"
}
