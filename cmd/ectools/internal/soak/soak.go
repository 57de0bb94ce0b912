package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/progress"
)

// ErrViolation is returned (wrapped) when an invariant does not hold.
var ErrViolation = errors.New("soak: invariant violated")

// Report is the outcome of a run.
type Report struct {
	Seed     int64
	Duration time.Duration
	Centers  int

	Messages, Committed, RolledBack int
	Kinds                           map[string]int
	// ParkedCommitted: committed by the producer, but the COMMIT envelope
	// was never acknowledged and check-back gave up (VERIFY_FAILED, an
	// operator's case; promise 3), so not forwarded.
	ParkedCommitted int
	// NeverArrived: committed, but neither envelope reached the broker.
	NeverArrived int
	// Incomplete: raw records that could not be written before the end.
	Incomplete int
	// VerifyFailed: rolled back or undecided messages parked VERIFY_FAILED.
	VerifyFailed   int
	ProduceErrors  int64
	ProducedPerSec float64

	ForwardedRecords, ForwardedIDs int
	// OrderedRecords are the forwarded records of messages with an order
	// key, over OrderKeys keys (what the per-key order invariant read).
	OrderedRecords, OrderKeys int
	// OrderedAhead are the messages written ahead and confirmed (store
	// rows with sent_ahead_offset set).
	OrderedAhead int
	// ForwardPerSec is distinct forwarded messages per second from the
	// start of production until the last one was read back.
	ForwardPerSec float64
	// ForwardWhileProducing is distinct messages forwarded per second
	// while the producers ran (the sustained rate when they offer more
	// than the centers take).
	ForwardWhileProducing float64
	// PerCenter is each center's eventcenter_forward_total{result="sent"}
	// summed over its lives (killed lives lose their counts).
	PerCenter []float64
	Restarts  []int

	CheckbackCalls, CheckbackRefused int64
	MaxCallsPerMessage               int

	Faults map[string]int
	// FaultErrors are faults that could not be injected or undone as
	// planned (a kill that failed, a PostgreSQL restart that failed, a
	// group that did not settle): each fails the run, as the faults it
	// claims to have survived did not all happen.
	FaultErrors []string
	// Unfenced are the isolations after which a center wrote Produce
	// requests while cut off, past its leases (chaos.isolate): each fails
	// the run.
	Unfenced []string
	// UnexpectedExits are center processes that exited without the soak
	// killing or stopping them: each fails the run.
	UnexpectedExits []string
	// AfterHeal is, per fault kind, the worst commit-to-forward latency of
	// the messages committed while a fault of that kind lasted or in the
	// afterHealWindow after its heal.
	AfterHeal []HealLatency
	// WorstCommitToForward is the worst over every forwarded message.
	WorstCommitToForward time.Duration
	Converged            bool
	Invariants           []*Invariant
	WorkDir              string
}

// OK tells whether every invariant held (check makes every fault error
// and unexpected exit a violation).
func (r *Report) OK() bool {
	for _, inv := range r.Invariants {
		if inv.Violations > 0 {
			return false
		}
	}
	return len(r.Invariants) > 0
}

// DuplicateRate is extra forwarded records per distinct forwarded message.
func (r *Report) DuplicateRate() float64 {
	if r.ForwardedIDs == 0 {
		return 0
	}
	return float64(r.ForwardedRecords-r.ForwardedIDs) / float64(r.ForwardedIDs)
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: seed %d, %s, %d centers (replay: --seed %d)\n", r.Seed, r.Duration, r.Centers, r.Seed)
	fmt.Fprintf(&b, "messages: %d (%d committed, %d rolled back or undecided); kinds %v\n", r.Messages, r.Committed, r.RolledBack, r.Kinds)
	fmt.Fprintf(&b, "producer: %.0f msg/s, %d sends failed (settled by check-back)\n", r.ProducedPerSec, r.ProduceErrors)
	fmt.Fprintf(&b, "forwarded: %d messages in %d records (duplicate rate %.4f); %.0f msg/s while producing, %.0f msg/s until the last\n",
		r.ForwardedIDs, r.ForwardedRecords, r.DuplicateRate(), r.ForwardWhileProducing, r.ForwardPerSec)
	fmt.Fprintf(&b, "ordered: %d records of %d order keys checked for commit order; %d messages written ahead\n",
		r.OrderedRecords, r.OrderKeys, r.OrderedAhead)
	for i, n := range r.PerCenter {
		fmt.Fprintf(&b, "  center %d: %.0f sent (%d starts)\n", i, n, r.Restarts[i])
	}
	fmt.Fprintf(&b, "committed but parked VERIFY_FAILED (commit envelope never acknowledged): %d; never reached the broker: %d; incomplete raw: %d\n",
		r.ParkedCommitted, r.NeverArrived, r.Incomplete)
	fmt.Fprintf(&b, "rolled back/undecided parked VERIFY_FAILED: %d\n", r.VerifyFailed)
	fmt.Fprintf(&b, "check-back calls: %d (%d refused during outages), at most %d for one message\n", r.CheckbackCalls, r.CheckbackRefused, r.MaxCallsPerMessage)
	fmt.Fprintf(&b, "faults:\n%s", formatCounts(r.Faults))
	fmt.Fprintf(&b, "worst commit-to-forward latency: %s over all messages; per fault kind, of messages committed during a fault or within %s after its heal:\n",
		r.WorstCommitToForward.Round(time.Millisecond), afterHealWindow)
	for _, h := range r.AfterHeal {
		fmt.Fprintf(&b, "  %-34s %4d faults, %6d messages, worst %9s (%s, committed %s after the fault began; forwarded %s after the heal)\n",
			h.Kind, h.Faults, h.Messages, h.Worst.Round(time.Millisecond), h.WorstKey, h.CommittedIn.Round(time.Millisecond), h.AfterHeal.Round(time.Millisecond))
	}
	for _, e := range r.FaultErrors {
		fmt.Fprintf(&b, "  fault error: %s\n", e)
	}
	fmt.Fprintf(&b, "converged: %v\ninvariants:\n", r.Converged)
	for _, inv := range r.Invariants {
		verdict := "ok"
		if inv.Violations > 0 {
			verdict = fmt.Sprintf("VIOLATED %d times", inv.Violations)
		}
		fmt.Fprintf(&b, "  %-70s %s\n", inv.Name, verdict)
		for _, e := range inv.Examples {
			fmt.Fprintf(&b, "      %s\n", e)
		}
	}
	if r.WorkDir != "" {
		fmt.Fprintf(&b, "logs and configs kept in %s\n", r.WorkDir)
	}
	return b.String()
}

// Run runs one soak and returns its report; the error wraps ErrViolation
// when an invariant failed, or says why the run could not be made.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Progress of the two long phases (produce, converge): a redrawn line
	// on a terminal, one line per phase otherwise; log lines go through it
	// so that they never mix with the redrawn line.
	pr := progress.New(cfg.Out, "soak", progress.Options{})
	out := func(format string, args ...any) {
		pr.Printf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
	rep := &Report{Seed: cfg.Seed, Duration: cfg.Duration, Centers: cfg.Centers, Kinds: map[string]int{}, Faults: map[string]int{}}
	out("soak: seed %d (replay with --seed %d), duration %s, rate %d/s, %d centers, faults %v", cfg.Seed, cfg.Seed, cfg.Duration, cfg.Rate, cfg.Centers, cfg.Faults)

	workDir := cfg.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "eventcenter-soak-")
		if err != nil {
			return nil, fmt.Errorf("soak: work dir: %w", err)
		}
		workDir = d
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("soak: work dir: %w", err)
	}
	keep := cfg.Keep || cfg.WorkDir != ""
	defer func() {
		if keep || !rep.OK() {
			rep.WorkDir = workDir
			return
		}
		_ = os.RemoveAll(workDir)
	}()

	// PostgreSQL: a primary, and with cfg.Standby a streaming standby.
	pg, err := newPGSet(ctx, cfg.PGBinDir, workDir, cfg.Standby, cfg.StandbyLag, out)
	if err != nil {
		return rep, err
	}
	defer pg.stop(context.WithoutCancel(ctx))
	out("postgres: %s (standby: %q, replication delayed %s)", pg.DSN(), cfg.Standby, cfg.StandbyLag)

	// The broker.
	kport, err := freePort()
	if err != nil {
		return rep, err
	}
	br, err := startBroker(ctx, cfg.BrokerBin, workDir, kport, cfg.Partitions, []string{controlTopic, controlTopic + ".dlq", businessTopic})
	if err != nil {
		return rep, err
	}
	defer func() { _ = br.stop(10 * time.Second) }()
	brokers := []string{br.addr}
	out("ecbroker: %s (control %s)", br.addr, br.control)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("soak: admin client: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// The producers' check-back endpoint.
	tr := newTruth()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, fmt.Errorf("soak: check-back listener: %w", err)
	}
	cbSrv := &http.Server{Handler: tr.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = cbSrv.Serve(l) }()
	defer func() { _ = cbSrv.Close() }()
	cbURL := "http://" + l.Addr().String()

	// Centers: migrate once, then start them all. Each reaches PostgreSQL,
	// the broker and the check-back endpoint through fault points of its
	// own (netProxy; the broker's names itself in Metadata, so the
	// center's every broker connection crosses it), which the chaos cuts,
	// delays, makes lossy or flaps.
	centers := make([]*centerProc, cfg.Centers)
	pgLinks := make([]linkSet, cfg.Centers)
	brokerLinks := make([]*netProxy, cfg.Centers)
	cbLinks := make([]*netProxy, cfg.Centers)
	defer func() {
		for _, l := range pgLinks {
			l.close()
		}
		for _, links := range [][]*netProxy{brokerLinks, cbLinks} {
			for _, p := range links {
				if p != nil {
					_ = p.close()
				}
			}
		}
	}()
	for i := range centers {
		port, err := freePort()
		if err != nil {
			return rep, err
		}
		// One fault point per PostgreSQL node; the DSN lists them all.
		var linkPorts []int
		for j, port := range pg.ports() {
			p, err := newNetProxy(fmt.Sprintf("center %d - postgres %d", i, j), fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return rep, err
			}
			pgLinks[i] = append(pgLinks[i], p)
			linkPorts = append(linkPorts, p.Port())
		}
		if brokerLinks[i], err = newKafkaProxy(fmt.Sprintf("center %d - broker", i), br.addr); err != nil {
			return rep, err
		}
		if cbLinks[i], err = newNetProxy(fmt.Sprintf("center %d - check-back", i), l.Addr().String()); err != nil {
			return rep, err
		}
		ccfg := centerConfig([]string{brokerLinks[i].Addr()}, dsnFor(linkPorts), port, cbURL, "http://"+cbLinks[i].Addr())
		if centers[i], err = newCenterProc(i, cfg.EventcenterBin, workDir, ccfg); err != nil {
			return rep, err
		}
	}
	if mout, err := runCmd(ctx, cfg.EventcenterBin, "migrate", "--config", centers[0].cfgPath); err != nil {
		return rep, fmt.Errorf("soak: migrate: %w\n%s", err, mout)
	}
	defer func() {
		var wg sync.WaitGroup
		for _, c := range centers {
			if c == nil {
				continue
			}
			wg.Go(func() {
				if err := c.stop(40 * time.Second); err != nil {
					out("center %d: %v", c.idx, err)
				}
			})
		}
		wg.Wait()
	}()
	for _, c := range centers {
		if err := c.start(); err != nil {
			return rep, err
		}
	}
	for _, c := range centers {
		if err := c.waitReady(ctx, time.Minute); err != nil {
			return rep, err
		}
	}
	out("%d centers ready", len(centers))

	col, stopCol, err := startCollector(brokers)
	if err != nil {
		return rep, err
	}
	defer stopCol()

	// Produce (and inject faults) for Duration.
	start := time.Now()
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Duration)
	defer cancelRun()
	finish, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), cfg.Duration+time.Minute)
	defer cancelFinish()
	w := &workload{cfg: &cfg, truth: tr, verify: cbURL + "/checkback", brokers: brokers}
	ch := &chaos{r: newRand(cfg.Seed, 1000), every: cfg.FaultEvery, centers: centers, pg: pg, broker: br, adm: adm, truth: tr,
		growAt: cfg.Duration * 2 / 5, cutAt: cfg.Duration / 5, pgLinks: pgLinks, out: out, counts: map[string]int{},
		brokerLinks: brokerLinks, cbLinks: cbLinks, brokerCutAt: cfg.Duration * 3 / 10, cbCutAt: cfg.Duration / 2,
		isolateAt: cfg.Duration * 3 / 5, failoverAt: cfg.Duration * 7 / 10, only: cfg.faultKinds}
	if cfg.Faults {
		ch.grow = 2
	}
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		if cfg.Faults {
			ch.run(runCtx)
		}
	}()
	expected := int64(0)
	if cfg.Rate > 0 {
		expected = int64(float64(cfg.Rate) * cfg.Duration.Seconds())
	}
	pr.Start("produce", "messages", expected)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				pr.Set(w.produced.Load(), max(expected, w.produced.Load()))
			}
		}
	}()
	if err := w.run(runCtx, finish); err != nil {
		return rep, err
	}
	produceTime := time.Since(start)
	col.mu.Lock()
	rep.ForwardWhileProducing = float64(len(col.byKey)) / produceTime.Seconds()
	col.mu.Unlock()
	<-chaosDone
	<-progressDone
	pr.Set(w.produced.Load(), w.produced.Load())
	pr.Done()
	rep.ProduceErrors = w.errs.Load()
	rep.ProducedPerSec = float64(w.produced.Load()) / produceTime.Seconds()
	out("producers done: %d messages in %s", w.produced.Load(), produceTime.Round(time.Millisecond))

	// Every fault is undone; a center that died on its own (recorded: it
	// fails the run) is restarted so the run can still converge and check
	// the rest.
	for _, c := range centers {
		if c.crashed() {
			out("center %d had exited on its own; restarting (see %s)", c.idx, c.logPath)
			if err := c.start(); err != nil {
				out("%v", err)
			}
		}
	}

	// Converge: every committed message forwarded, nothing PREPARED.
	deadline := time.Now().Add(cfg.Settle)
	var lastForward time.Time
	base := -1 // messages to settle when converging starts
	pr.Start("converge", "messages settled", 0)
	defer pr.Done()
	for {
		msgs, _ := tr.snapshot()
		rows, err := readStore(ctx, pg.DSN())
		if err == nil {
			unfwd, prep := pending(msgs, col, rows)
			// Settled: forwarded, or no longer PREPARED.
			if base < 0 {
				base = unfwd + prep
			}
			pr.Set(int64(max(base-unfwd-prep, 0)), int64(base))
			if unfwd == 0 && lastForward.IsZero() {
				lastForward = time.Now()
			}
			if unfwd == 0 && prep == 0 && col.caughtUp(ctx, adm) {
				rep.Converged = true
				pr.Done()
				break
			}
			if time.Now().After(deadline) {
				out("not converged after %s: %d committed messages not forwarded, %d PREPARED", cfg.Settle, unfwd, prep)
				break
			}
		} else if time.Now().After(deadline) {
			return rep, err
		}
		sleep(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	if lastForward.IsZero() {
		lastForward = time.Now()
	}
	for i, c := range centers {
		n, err := c.scrapeSent(ctx)
		if err != nil {
			out("%v", err)
		}
		rep.PerCenter = append(rep.PerCenter, c.sentBefore+n)
		rep.Restarts = append(rep.Restarts, centers[i].starts)
	}
	msgs, calls := tr.snapshot()
	rows, err := readStore(ctx, pg.DSN())
	if err != nil {
		return rep, err
	}
	var episodes []episode
	rep.Faults, rep.FaultErrors, rep.Unfenced, episodes = ch.summary()
	rep.AfterHeal, rep.WorstCommitToForward = afterHeal(episodes, msgs, col)
	for _, c := range centers {
		rep.UnexpectedExits = append(rep.UnexpectedExits, c.unexpectedExits()...)
	}
	check(time.Now(), msgs, calls, col, rows, rep)
	rep.ForwardPerSec = float64(rep.ForwardedIDs) / lastForward.Sub(start).Seconds()
	rep.CheckbackRefused = tr.refused.Load()
	if !rep.OK() {
		return rep, fmt.Errorf("%w (seed %d)", ErrViolation, cfg.Seed)
	}
	return rep, nil
}

// centerConfig is one center's configuration in a soak: it calls the
// check-back endpoint the PREPAREs name (cbURL) at cbLink, its own fault
// point in front of it.
func centerConfig(brokers []string, dsn string, httpPort int, cbURL, cbLink string) config.Config {
	cfg := config.Default()
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.ControlTopic = controlTopic
	cfg.Kafka.Group = groupName
	cfg.Kafka.SessionTimeout = sessionTimeout
	cfg.Kafka.MetadataMaxAge = 2 * time.Second
	cfg.Store = config.Store{Driver: "postgres", DSN: dsn, MaxConns: 8}
	cfg.HTTP.Listen = fmt.Sprintf("127.0.0.1:%d", httpPort)
	cfg.Admin.Insecure = true
	cfg.Ingest.SendLease = sendLease
	cfg.Forward.ScanInterval = 500 * time.Millisecond
	cfg.Forward.Lease = sendLease
	cfg.Forward.SendTimeout = sendTimeout
	cfg.Forward.BackoffBase = 100 * time.Millisecond
	cfg.Forward.BackoffCap = 2 * time.Second
	cfg.Forward.MaxAttempts = 1000 // broker faults must not make messages DEAD
	cfg.Forward.Targets = []config.Target{{Name: "kafka", Type: "kafka", AutoCreateTopics: true}}
	cfg.Checkback.Policy = config.Policy{FirstDelay: checkFirstDelay, BackoffBase: checkBackoffBase, BackoffCap: checkBackoffCap,
		MaxAttempts: checkMaxAttempts, Timeout: checkTimeout}
	cfg.Checkback.Allow = []string{cbURL, cbLink}
	cfg.Checkback.Biz = []config.Biz{{BizID: bizID, Endpoint: cbLink + "/checkback", ForceEndpoint: true}}
	// A check-back lost with a killed center comes back within the settle
	// time (the default lease is 2 minutes).
	cfg.Checkback.Lease = 10 * time.Second
	cfg.Checkback.Breaker = config.Breaker{Failures: 50, Cooldown: time.Second}
	cfg.Log.Level = "warn"
	return cfg
}
