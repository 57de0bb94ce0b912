// Command example-producer is a small producer for the compose demo
// (deploy/compose): it keeps "orders" in an in-memory database and
// announces each one through eventcenter with clientlib's Transact, so the
// order and its message either both happen or neither does. It answers the
// center's check-backs on /checkback from that database.
//
// To show every path of the center it mixes in, by count: orders whose
// local transaction fails (ROLLBACK), orders whose COMMIT is "lost" as if
// the process had died after its local commit (the center checks back and
// then forwards), and orders forwarded to the RocketMQ target.
//
// Environment (defaults in brackets):
//
//	PRODUCER_BROKERS         Kafka seed brokers, comma-separated [127.0.0.1:9092]
//	PRODUCER_CONTROL_TOPIC   the center's control topic [eventcenter.control]
//	PRODUCER_LISTEN          HTTP listen address [127.0.0.1:8090]
//	PRODUCER_CHECKBACK_URL   check-back endpoint the center calls [http://127.0.0.1:8090/checkback]
//	PRODUCER_BIZ_ID          bizID [orders]
//	PRODUCER_TOPIC           business topic (Kafka target) [orders.events]
//	PRODUCER_RATE            orders per second made by itself; 0 = only POST /orders [1]
//	PRODUCER_FAIL_EVERY      every Nth local transaction fails; 0 = never [7]
//	PRODUCER_LOSE_EVERY      every Nth COMMIT is not sent; 0 = never [13]
//	PRODUCER_ROCKETMQ_EVERY  every Nth order goes to the "rocketmq" target; 0 = never [10]
//	PRODUCER_ROCKETMQ_TOPIC  its RocketMQ topic [orders-rmq]
//
// HTTP: POST /orders makes one order and answers {"id":…,"state":…};
// GET /healthz answers 200; anything under /checkback is the check-back
// handler (HTTP, Dubbo Triple JSON and JSON-RPC).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/eventcenter/eventcenter/clientlib"
)

type settings struct {
	brokers                         []string
	controlTopic, listen, checkback string
	bizID, topic, rocketmqTopic     string
	rate                            float64
	failEvery, loseEvery, rmqEvery  int64
}

// load reads the settings from the environment (getenv is os.Getenv).
func load(getenv func(string) string) (settings, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	envInt := func(name string, def int64) (int64, error) {
		v, err := strconv.ParseInt(env(name, strconv.FormatInt(def, 10)), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s: want a non-negative integer, got %q", name, getenv(name))
		}
		return v, nil
	}
	s := settings{
		brokers:       strings.Split(env("PRODUCER_BROKERS", "127.0.0.1:9092"), ","),
		controlTopic:  env("PRODUCER_CONTROL_TOPIC", clientlib.DefaultControlTopic),
		listen:        env("PRODUCER_LISTEN", "127.0.0.1:8090"),
		checkback:     env("PRODUCER_CHECKBACK_URL", "http://127.0.0.1:8090/checkback"),
		bizID:         env("PRODUCER_BIZ_ID", "orders"),
		topic:         env("PRODUCER_TOPIC", "orders.events"),
		rocketmqTopic: env("PRODUCER_ROCKETMQ_TOPIC", "orders-rmq"),
	}
	rate, err := strconv.ParseFloat(env("PRODUCER_RATE", "1"), 64)
	if err != nil || rate < 0 {
		return s, fmt.Errorf("PRODUCER_RATE: want a non-negative number, got %q", getenv("PRODUCER_RATE"))
	}
	s.rate = rate
	var errs []error
	var e error
	s.failEvery, e = envInt("PRODUCER_FAIL_EVERY", 7)
	errs = append(errs, e)
	s.loseEvery, e = envInt("PRODUCER_LOSE_EVERY", 13)
	errs = append(errs, e)
	s.rmqEvery, e = envInt("PRODUCER_ROCKETMQ_EVERY", 10)
	errs = append(errs, e)
	return s, errors.Join(errs...)
}

// orderState is the producer's own record of an order.
type orderState string

const (
	stateRunning   orderState = "running" // local transaction in progress
	stateCommitted orderState = "committed"
	stateFailed    orderState = "failed"
)

// db is the producer's "database": what a check-back looks up.
type db struct {
	mu     sync.Mutex
	orders map[string]orderState
}

func (d *db) set(id string, st orderState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.orders[id] = st
}

func (d *db) decision(id string) clientlib.Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.orders[id] {
	case stateCommitted:
		return clientlib.DecisionCommit
	case stateRunning:
		return clientlib.DecisionUnknown
	default: // failed, or never written: it did not happen
		return clientlib.DecisionRollback
	}
}

type app struct {
	s   settings
	p   *clientlib.Producer
	db  *db
	seq atomic.Int64
	log *slog.Logger
}

// errLocal is the simulated failure of a local transaction.
var errLocal = errors.New("local transaction failed (simulated)")

// order makes one order: PREPARE, the local transaction, COMMIT/ROLLBACK.
func (a *app) order(ctx context.Context) (string, orderState, error) {
	n := a.seq.Add(1)
	id := fmt.Sprintf("order-%d-%d", time.Now().UnixNano(), n)
	body, err := json.Marshal(map[string]any{"id": id, "amount": n % 100, "at": time.Now().UTC()})
	if err != nil {
		return id, "", fmt.Errorf("encode order: %w", err)
	}
	msg := clientlib.Message{BizID: a.s.bizID, Key: id, Payload: body, ForwardTopic: a.s.topic, ForwardKey: id}
	if every(n, a.s.rmqEvery) {
		msg.Target, msg.ForwardTopic, msg.Tag = "rocketmq", a.s.rocketmqTopic, "order"
	}
	local := func(context.Context) error {
		a.db.set(id, stateRunning)
		if every(n, a.s.failEvery) {
			a.db.set(id, stateFailed)
			return errLocal
		}
		a.db.set(id, stateCommitted)
		return nil
	}
	if every(n, a.s.loseEvery) {
		// As if the process died between its local commit and COMMIT:
		// only PREPARE is sent; the center's check-back settles it.
		if err := a.p.Prepare(ctx, msg); err != nil {
			return id, "", fmt.Errorf("prepare %s: %w", id, err)
		}
		_ = local(ctx)
		return id, stateCommitted, nil
	}
	err = a.p.Transact(ctx, msg, local)
	switch {
	case errors.Is(err, errLocal):
		return id, stateFailed, nil
	case errors.Is(err, clientlib.ErrCommitUnsent):
		a.log.Warn("commit unsent; check-back will settle it", "id", id, "err", err)
		return id, stateCommitted, nil
	case err != nil:
		return id, "", fmt.Errorf("transact %s: %w", id, err)
	}
	return id, stateCommitted, nil
}

func every(n, k int64) bool { return k > 0 && n%k == 0 }

func (a *app) handleOrders(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	id, st, err := a.order(r.Context())
	if err != nil {
		a.log.Error("order", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "state": string(st)})
}

// generate makes orders at the configured rate until ctx ends.
func (a *app) generate(ctx context.Context) {
	if a.s.rate == 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / a.s.rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, _, err := a.order(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("order", "err", err)
			}
		}
	}
}

// run serves until ctx ends; listening tells the caller the bound address.
func run(ctx context.Context, log *slog.Logger, s settings, listening func(addr string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, err := clientlib.NewProducer(
		clientlib.WithBrokers(s.brokers...),
		clientlib.WithControlTopic(s.controlTopic),
		clientlib.WithDefaultVerify(s.checkback),
		clientlib.WithLogger(log),
	)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	a := &app{s: s, p: p, db: &db{orders: map[string]orderState{}}, log: log}

	mux := http.NewServeMux()
	mux.HandleFunc("/orders", a.handleOrders)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	check := clientlib.NewCheckbackHandler(func(_ context.Context, bizID, key string) (clientlib.Decision, error) {
		if bizID != s.bizID {
			return clientlib.DecisionUnknown, fmt.Errorf("unknown bizID %q", bizID)
		}
		d := a.db.decision(key)
		log.Info("check-back", "key", key, "decision", d.String())
		return d, nil
	}, clientlib.WithCheckbackLogger(log))
	mux.Handle("/checkback", check)
	mux.Handle("/checkback/", check)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}

	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http: %w", err)
		}
	})
	wg.Go(func() { a.generate(ctx) })
	log.Info("example producer running", "listen", ln.Addr().String(), "control_topic", s.controlTopic, "rate", s.rate)
	if listening != nil {
		listening(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel() // stops generate
	shutdown, cancelShutdown := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelShutdown()
	if serr := srv.Shutdown(shutdown); serr != nil && err == nil {
		err = fmt.Errorf("http shutdown: %w", serr)
	}
	wg.Wait()
	return err
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := load(os.Getenv)
	if err != nil {
		log.Error("example producer: configuration", "err", err)
		os.Exit(2)
	}
	if err := run(ctx, log, s, nil); err != nil {
		log.Error("example producer", "err", err)
		os.Exit(1)
	}
}
