package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ecbroker:", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	port       int
	dataDir    string
	topics     string
	partitions int
	control    string
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ecbroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.port, "port", 9092, "Kafka listener port on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&o.dataDir, "data-dir", "", "persist topics here (empty: in memory only)")
	fs.StringVar(&o.topics, "topics", "", "comma-separated topics to create at start")
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of each seeded topic and of auto-created topics")
	fs.StringVar(&o.control, "control", "127.0.0.1:0", "HTTP control endpoint address (fault injection)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if o.partitions < 1 {
		return o, errors.New("--partitions must be at least 1")
	}
	if o.port < 0 || o.port > 65535 {
		return o, fmt.Errorf("--port %d is not a port", o.port)
	}
	return o, nil
}

// faults holds the current injected error rates per request kind.
type faults struct {
	mu    sync.Mutex
	rates map[string]float64
	hits  map[string]int64
}

// kinds maps the names the control endpoint accepts to request keys.
var kinds = map[string]kmsg.Key{"produce": kmsg.Produce, "fetch": kmsg.Fetch}

func (f *faults) set(kind string, rate float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rates[kind] = rate
}

// fail decides whether one request of kind fails now.
func (f *faults) fail(kind string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rates[kind]
	if r > 0 && rand.Float64() < r {
		f.hits[kind]++
		return true
	}
	return false
}

func (f *faults) snapshot() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]any{}
	for k := range kinds {
		out[k] = f.rates[k]
		out[k+"_failed"] = f.hits[k]
	}
	return out
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(o.port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(o.partitions),
	}
	if o.dataDir != "" {
		opts = append(opts, kfake.DataDir(o.dataDir))
	}
	var topics []string
	for t := range strings.SplitSeq(o.topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(o.partitions), topics...))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer cluster.Close()

	fl := &faults{rates: map[string]float64{}, hits: map[string]int64{}}
	for name, key := range kinds {
		cluster.Fault(kfake.Fault{
			Keys:  []kmsg.Key{key},
			Err:   kerr.NotLeaderForPartition,
			Count: -1,
			When:  func(kmsg.Request) bool { return fl.fail(name) },
		})
	}

	l, err := net.Listen("tcp", o.control)
	if err != nil {
		return fmt.Errorf("listen on --control %s: %w", o.control, err)
	}
	srv := &http.Server{Handler: controlHandler(fl), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	_, _ = fmt.Fprintf(stdout, "ecbroker listening on %s control http://%s\n", strings.Join(cluster.ListenAddrs(), ","), l.Addr())

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	outage := false
	for {
		select {
		case <-ctx.Done():
			return shutdown(srv, served)
		case err := <-served:
			return fmt.Errorf("control endpoint: %w", err)
		case s := <-sigs:
			if s != syscall.SIGUSR1 {
				log.Info("stopping", "signal", s.String())
				return shutdown(srv, served)
			}
			outage = !outage
			rate := 0.0
			if outage {
				rate = 1
			}
			fl.set("produce", rate)
			fl.set("fetch", rate)
			log.Info("SIGUSR1: broker outage toggled", "outage", outage)
		}
	}
}

func shutdown(srv *http.Server, served chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve: %w", serr))
	}
	return err
}

// controlHandler serves GET /faults and POST /faults?key=produce|fetch&rate=0..1.
func controlHandler(fl *faults) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fl.snapshot())
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		kind := r.URL.Query().Get("key")
		if _, ok := kinds[kind]; !ok {
			http.Error(w, "key must be produce or fetch", http.StatusBadRequest)
			return
		}
		rate, err := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		if err != nil || rate < 0 || rate > 1 {
			http.Error(w, "rate must be a number from 0 to 1", http.StatusBadRequest)
			return
		}
		fl.set(kind, rate)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fl.snapshot())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}
