package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/store"
)

// Store is what the ingester needs from the database: the forwarder's
// fast path (forwarder.Applier) over the store, so that messages a batch
// makes sendable are leased and handed over for sending at once. Its Apply
// is called on the consumer's path and must not block for long after the
// commit.
type Store interface {
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
}

// Ingester consumes the control topic and applies it to the store.
type Ingester struct {
	cfg   Config
	st    Store
	owned *Ownership
	log   *slog.Logger
	met   *laneMetrics
	dec   envelope.Decoder
	// differing counts duplicate PREPAREs with a different body.
	differing differing

	// Base gives Stop and the shared start/stop semantics.
	startstop.Base

	mu sync.Mutex
	r  *run // the started run, set by Start

	// joined is set by each assignment from the group, empty ones
	// included, and cleared when the assignment is lost or the consumer
	// stops (see Joined).
	joined atomic.Bool
	// health says whether the consumer is consuming (see Consuming).
	health health
	// dlqCompression is Config.DLQCompression as a client option.
	dlqCompression kgo.Opt
}

// Joined tells whether the consumer is in the group with its assignment:
// the group has answered its join with an assignment (even an empty one:
// an instance beyond the control topic's partition count owns nothing and
// is still healthy) and it has not been lost since. It is false before the
// control topic exists, since the consumer joins only once it sees it.
func (in *Ingester) Joined() bool { return in.joined.Load() }

// Consuming tells whether records are being consumed: the consumer is in
// the group (Joined) and, since its last failed broker connection, a fetch
// of the control topic was answered (or, owning no partition, the group
// coordinator answered). After a broker restart the assignment outlives
// the connection for seconds; this does not. When not, why says what it
// waits for and cause is the broker failure since which it waits, if any
// (it names the broker).
func (in *Ingester) Consuming() (ok bool, why string, cause error) {
	if !in.Joined() {
		return false, "waiting for the consumer group to assign partitions", nil
	}
	in.mu.Lock()
	r := in.r
	in.mu.Unlock()
	owning := false
	if r != nil {
		r.mu.Lock()
		owning = len(r.assigned) > 0
		r.mu.Unlock()
	}
	return in.health.consuming(owning)
}

// New checks the configuration and builds an Ingester; it connects nothing
// (Start does). A plain store (no forwarder.Applier) leaves sendable
// messages to the forwarder's scan.
func New(cfg Config, st Store, owned *Ownership) (*Ingester, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("ingest: store is nil")
	}
	if owned == nil {
		return nil, errors.New("ingest: ownership set is nil")
	}
	met := cfg.Metrics
	if met == nil {
		var err error
		if met, err = newMetrics(cfg.Registerer); err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	compression, err := kafkarec.CompressionOpt(cfg.DLQCompression)
	if err != nil {
		return nil, fmt.Errorf("ingest: DLQCompression: %w", err)
	}
	return &Ingester{
		cfg: cfg, st: st, owned: owned,
		log:            laneLogger(cfg),
		met:            met.forLane(cfg.LaneName),
		dec:            envelope.Decoder{MaxPayload: cfg.MaxPayload},
		dlqCompression: compression,
	}, nil
}

// laneLogger is the ingester's logger: its topic and group, and its lane
// when not the default.
func laneLogger(cfg Config) *slog.Logger {
	if cfg.Lane == 0 {
		return cfg.Logger.With("topic", cfg.ControlTopic, "group", cfg.Group)
	}
	return cfg.Logger.With("topic", cfg.ControlTopic, "group", cfg.Group, "lane", cfg.Lane)
}

// run is one started consumer: its client, its lifetime and the offsets it
// applied but has not committed yet.
type run struct {
	cl *kgo.Client
	// big produces dead letters too large for a batch of franz-go's
	// default size, one at a time (nil when MaxPayload is small enough).
	big *kgo.Client

	// pollCtx ends when the ingester is asked to stop (Stop, or the
	// context given to Start ends): no more polls, no more retries.
	pollCtx context.Context
	// workCtx carries store applies, dead-letter produces and commits; it
	// ends when Stop's context does (abandon the batch in hand) or when
	// the consumer is gone.
	workCtx context.Context

	mu sync.Mutex
	// applied are the next offsets to commit for partitions whose records
	// were applied but not committed yet.
	applied map[int32]kgo.EpochOffset
	// assigned are the partitions this run added to the ownership set.
	assigned map[int32]bool
	// wanted is closed when a rebalance waits for the poll in hand
	// (renewed before every poll); wantedClosed says it was.
	wanted       chan struct{}
	wantedClosed bool

	// polled is how many records the previous poll returned (only the
	// loop's goroutine uses it).
	polled int
}

// renewWanted arms the rebalance-wanted signal for the next poll.
func (r *run) renewWanted() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wanted, r.wantedClosed = make(chan struct{}), false
	return r.wanted
}

// rebalanceWanted fires the signal: a rebalance is blocked by the poll in
// hand.
func (r *run) rebalanceWanted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wanted != nil && !r.wantedClosed {
		close(r.wanted)
		r.wantedClosed = true
	}
}

// Start joins the consumer group and starts consuming in a goroutine; it
// returns at once. When ctx ends, the ingester stops as if Stop were called
// (Stop must still be called to wait for it).
//
// Stop (startstop.Base's) stops polling, finishes the batch in hand
// (applies it and commits its offsets), leaves the group and waits until
// the consumer is gone. If Stop's ctx ends first, the batch in hand is
// abandoned uncommitted (it is replayed by the partition's next owner) and
// Stop returns ctx's error after the consumer is gone.
func (in *Ingester) Start(ctx context.Context) error {
	return in.StartFunc(ctx, func(sr startstop.Run) (func() error, error) {
		r, err := in.newRun(sr)
		if err != nil {
			return nil, err
		}
		in.mu.Lock()
		in.r = r
		in.mu.Unlock()
		in.log.Info("ingest started", "brokers", in.cfg.Brokers)
		return func() error {
			err := in.loop(r)
			if r.workCtx.Err() != nil {
				return fmt.Errorf("ingest: stop: %w", context.Cause(r.workCtx))
			}
			return err
		}, nil
	})
}

// newRun creates the run's Kafka clients.
func (in *Ingester) newRun(sr startstop.Run) (*run, error) {
	r := &run{
		pollCtx:  sr.Ctx,
		workCtx:  sr.Work,
		applied:  map[int32]kgo.EpochOffset{},
		assigned: map[int32]bool{},
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(in.cfg.Brokers...),
		kgo.ConsumerGroup(in.cfg.Group),
		kgo.ConsumeTopics(in.cfg.ControlTopic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Dead letters are produced synchronously: lingering only delays.
		kgo.ProducerLinger(0),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			in.assigned(r, m[in.cfg.ControlTopic])
			in.joined.Store(true) // franz-go calls this for empty assignments too
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			in.revoked(r, cl, m[in.cfg.ControlTopic], true)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			in.joined.Store(false)
			in.revoked(r, cl, m[in.cfg.ControlTopic], false)
		}),
		// A failing batch must not hold a rebalance until the member is
		// kicked out: its retry is abandoned and the partition rewound.
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { r.rebalanceWanted() }),
		kgo.WithHooks(&in.health),
		in.dlqCompression,
	}
	opts = append(opts, in.cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: create kafka client: %w", err)
	}
	r.cl = cl
	if in.cfg.dlqBatchMax() > defaultBatchMax {
		bopts := append([]kgo.Opt{
			kgo.SeedBrokers(in.cfg.Brokers...),
			kgo.ProducerLinger(0),
			kgo.ProducerBatchMaxBytes(in.cfg.dlqBatchMax()),
			in.dlqCompression,
		}, in.cfg.ClientOptions...)
		big, err := kgo.NewClient(bopts...)
		if err != nil {
			cl.Close()
			return nil, fmt.Errorf("ingest: create kafka client for large dead letters: %w", err)
		}
		r.big = big
	}
	return r, nil
}

// loop is the consumer: poll, apply per partition, commit, allow rebalance.
func (in *Ingester) loop(r *run) error {
	in.checkDLQAtStart(r.pollCtx, r.cl)
	for r.pollCtx.Err() == nil {
		wanted := r.renewWanted()
		fs, closed := in.poll(r)
		if closed {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			in.log.Warn("fetch error", "fetch_topic", topic, "partition", p, "err", err)
		})
		rewind := in.process(r, fs, wanted)
		in.commit(r, r.cl, nil) //nolint:errcheck // logged and counted; the next commit retries
		if len(rewind) > 0 && r.pollCtx.Err() == nil {
			// Batches abandoned for a rebalance are fetched again if the
			// partition stays ours; if not, its next owner starts at the
			// last commit. Either way nothing is skipped.
			r.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{in.cfg.ControlTopic: rewind})
			in.log.Info("failing batches abandoned to let a rebalance through; partitions rewound", "partitions", len(rewind))
		}
		r.cl.AllowRebalance()
	}
	return in.shutdown(r)
}

// poll takes the next records. A fetch the client buffered while the
// previous batch was applied holds only what the broker had when that
// fetch was answered (franz-go keeps one buffered fetch per broker and
// sends the next fetch only once it is taken): records that arrived since
// would wait for a whole further apply. So when something is buffered,
// poll takes it and then waits up to FreshFetchWait for the fetch that
// taking it sent, which brings what arrived meanwhile. It waits only when
// the previous poll returned more than one record: records then arrive
// faster than one per batch and the fetch in flight finds some; at a lower
// rate it would find nothing and the wait would only delay (measured at
// 500 msg/s: p90 +1.2 ms when it always waited). When nothing is buffered
// poll waits for the broker, whose answer is fresh.
func (in *Ingester) poll(r *run) (fs kgo.Fetches, closed bool) {
	defer func() { r.polled = fs.NumRecords() }()
	fs = r.cl.PollRecords(nil, in.cfg.MaxPollRecords) //nolint:staticcheck // nil: only what is buffered (documented)
	n := fs.NumRecords()
	if n == 0 && len(fs) == 0 {
		fs = r.cl.PollRecords(r.pollCtx, in.cfg.MaxPollRecords)
		return fs, fs.IsClientClosed()
	}
	if fs.IsClientClosed() {
		return fs, true
	}
	if n == 0 || r.polled < 2 || in.cfg.FreshFetchWait <= 0 || n >= in.cfg.MaxPollRecords {
		return fs, false
	}
	ctx, cancel := context.WithTimeout(r.pollCtx, in.cfg.FreshFetchWait)
	more := r.cl.PollRecords(ctx, in.cfg.MaxPollRecords-n)
	cancel()
	fs = append(fs, more...)
	return fs, more.IsClientClosed()
}

// shutdown commits what was applied, leaves the group (the final revoke
// commits again) and closes the client.
func (in *Ingester) shutdown(r *run) error {
	var errs []error
	if err := in.commit(r, r.cl, nil); err != nil {
		errs = append(errs, err)
	}
	r.cl.AllowRebalance()
	if err := r.cl.LeaveGroupContext(r.workCtx); err != nil {
		errs = append(errs, fmt.Errorf("ingest: leave group: %w", err))
	}
	r.cl.Close()
	if r.big != nil {
		r.big.Close()
	}
	in.joined.Store(false)
	// A leave that was cut short may not have run the final revoke.
	r.mu.Lock()
	var left []int32
	for p := range r.assigned {
		left = append(left, p)
	}
	r.mu.Unlock()
	if len(left) > 0 {
		in.revoked(r, nil, left, false)
	}
	in.log.Info("ingest stopped")
	return errors.Join(errs...)
}

// assigned adds newly assigned partitions to the ownership set.
func (in *Ingester) assigned(r *run, parts []int32) {
	if len(parts) == 0 {
		return
	}
	r.mu.Lock()
	for _, p := range parts {
		r.assigned[p] = true
	}
	n := len(r.assigned)
	r.mu.Unlock()
	in.owned.Assign(in.storePartitions(parts)...)
	in.met.owned.Set(float64(in.owned.Len()))
	in.log.Info("partitions assigned", "partitions", parts, "owned", n)
}

// revoked gives partitions up: for a revoke (not a loss) it first commits
// what was applied for them, then removes them from the ownership set.
func (in *Ingester) revoked(r *run, cl *kgo.Client, parts []int32, commit bool) {
	if len(parts) == 0 {
		return
	}
	if commit && cl != nil {
		in.commit(r, cl, parts) //nolint:errcheck // logged; the next owner replays
	}
	r.mu.Lock()
	for _, p := range parts {
		delete(r.applied, p)
		delete(r.assigned, p)
	}
	n := len(r.assigned)
	r.mu.Unlock()
	stored := in.storePartitions(parts)
	in.owned.Revoke(stored...)
	for _, p := range stored {
		in.met.lag.DeleteLabelValues(partitionLabel(p))
	}
	in.met.owned.Set(float64(in.owned.Len()))
	how := "revoked"
	if !commit && cl != nil {
		how = "lost"
		in.met.lost.Add(float64(len(parts)))
	}
	in.log.Info("partitions "+how, "partitions", parts, "owned", n)
}

// commit commits the applied offsets of parts (nil: all partitions).
// Offsets stay pending when the commit fails; the next call retries them.
func (in *Ingester) commit(r *run, cl *kgo.Client, parts []int32) error {
	r.mu.Lock()
	offs := make(map[int32]kgo.EpochOffset, len(r.applied))
	if parts == nil {
		for p, o := range r.applied {
			offs[p] = o
		}
	} else {
		for _, p := range parts {
			if o, ok := r.applied[p]; ok {
				offs[p] = o
			}
		}
	}
	r.mu.Unlock()
	if len(offs) == 0 {
		return nil
	}
	var err error
	cl.CommitOffsetsSync(r.workCtx, map[string]map[int32]kgo.EpochOffset{in.cfg.ControlTopic: offs},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
			err = commitErr(resp, cerr)
		})
	if err != nil {
		in.met.commitErrs.Inc()
		in.log.Warn("offset commit failed; retried with the next commit", "err", err)
		return fmt.Errorf("ingest: commit offsets: %w", err)
	}
	r.mu.Lock()
	for p, o := range offs {
		if cur, ok := r.applied[p]; ok && cur == o {
			delete(r.applied, p)
		}
	}
	r.mu.Unlock()
	return nil
}

// commitErr is the error of a commit: the request's, or the first
// partition's.
func commitErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, err)
			}
		}
	}
	return nil
}
