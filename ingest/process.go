package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Why a retry was abandoned.
var (
	errStopping  = errors.New("ingester stopping")
	errRebalance = errors.New("rebalance waiting")
)

// batch is one partition's records of one poll.
type batch struct {
	partition int32
	records   []*kgo.Record
	hwm       int64
}

// group is the partitions of a poll applied in one store transaction.
type group struct {
	batches []*batch
	records int
}

// groupBatches splits a poll's partition batches into at most parallelism
// groups of at least minRecords records each (one group when the poll is
// smaller), balanced by record count: largest batch first into the
// smallest group. Under light load a poll is one transaction; under heavy
// load it is a few large ones, applied in parallel.
func groupBatches(batches []*batch, parallelism, minRecords int) []*group {
	total := 0
	for _, b := range batches {
		total += len(b.records)
	}
	n := min(parallelism, len(batches), max(1, total/max(1, minRecords)))
	groups := make([]*group, n)
	for i := range groups {
		groups[i] = &group{}
	}
	sorted := slices.Clone(batches)
	slices.SortStableFunc(sorted, func(a, b *batch) int { return len(b.records) - len(a.records) })
	for _, b := range sorted {
		g := groups[0]
		for _, h := range groups[1:] {
			if h.records < g.records {
				g = h
			}
		}
		g.batches = append(g.batches, b)
		g.records += len(b.records)
	}
	return groups
}

// process applies every partition of a poll, in groups applied in
// parallel, and records the offsets of those that were applied. It returns
// where to rewind the partitions whose group was abandoned (ingester
// stopping, or a rebalance waiting while the group kept failing).
func (in *Ingester) process(r *run, fs kgo.Fetches, wanted <-chan struct{}) map[int32]kgo.EpochOffset {
	byPart := map[int32]*batch{}
	var order []*batch
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != in.cfg.ControlTopic || len(p.Records) == 0 {
			return
		}
		b := byPart[p.Partition]
		if b == nil {
			b = &batch{partition: p.Partition}
			byPart[p.Partition] = b
			order = append(order, b)
		}
		b.records = append(b.records, p.Records...)
		b.hwm = max(b.hwm, p.HighWatermark)
	})
	if len(order) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var rewind map[int32]kgo.EpochOffset
	for _, g := range groupBatches(order, in.cfg.Parallelism, in.cfg.MinApplyRecords) {
		wg.Go(func() {
			if in.processGroup(r, g, wanted) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if rewind == nil {
				rewind = map[int32]kgo.EpochOffset{}
			}
			for _, b := range g.batches {
				first := b.records[0]
				rewind[b.partition] = kgo.EpochOffset{Epoch: first.LeaderEpoch, Offset: first.Offset}
			}
		})
	}
	wg.Wait()
	return rewind
}

// processGroup decodes a group's records, dead-letters the malformed ones,
// applies the rest in one store transaction, hands the sendable messages
// over and marks each partition's offsets for commit. It returns true when
// that is done, false when the group was abandoned (nothing marked).
func (in *Ingester) processGroup(r *run, g *group, wanted <-chan struct{}) bool {
	now := in.cfg.Now()
	changes := make([]store.Change, 0, g.records)
	types := make([]envelope.Type, 0, g.records)
	origin := make([]*kgo.Record, 0, g.records)
	var dead []*deadLetter
	for _, b := range g.batches {
		for _, rec := range b.records {
			e, err := in.decode(rec)
			if rec.Partition >= LaneStride {
				err = beyondStride(rec)
			}
			if err == nil && e.Type == envelope.Prepare {
				if n := forwardedSize(&e); n > in.cfg.maxRecord() {
					err = fmt.Errorf("forwarded record of %d bytes (payload %d, forward key, headers and id) exceeds the limit of %d (max payload %d + %d): %w",
						n, len(e.Payload), in.cfg.maxRecord(), in.cfg.MaxPayload, RecordOverhead, envelope.ErrTooLarge)
				} else if err = in.checkTopic(&e); err != nil {
					err = &envelope.DecodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
						Field: envelope.HeaderTopic, Reason: err.Error(), Err: envelope.ErrInvalid}
				} else if field, reason := in.schedule(&e, recordTime(rec, now)); reason != "" {
					err = &envelope.DecodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
						Field: field, Reason: reason, Err: envelope.ErrInvalid}
				}
			}
			if err != nil {
				typ, native := headerType(rec)
				dead = append(dead, &deadLetter{src: rec, err: err, reason: dlqReason(err, native), typ: typ})
				in.log.Warn("malformed control record sent to the dead-letter topic",
					"partition", rec.Partition, "offset", rec.Offset, "err", err)
				continue
			}
			c := in.change(&e, StorePartition(in.cfg.Lane, rec.Partition), now)
			c.Offset, c.HasOffset = rec.Offset, true
			changes = append(changes, c)
			types = append(types, e.Type)
			origin = append(origin, rec)
		}
	}
	parts := g.partitions()

	if len(dead) > 0 {
		if err := in.writeDeadLetters(r, wanted, parts, dead); err != nil {
			return false
		}
		in.accountDeadLetters(dead)
	}

	if len(changes) > 0 {
		var res store.ApplyResult
		err := in.retry(r, wanted, "apply batch", parts, in.met.storeErrs, time.Time{}, func(ctx context.Context) error {
			start := time.Now()
			var err error
			res, err = in.st.Apply(ctx, store.ApplyRequest{Changes: changes})
			if err == nil {
				in.met.applyDur.Observe(time.Since(start).Seconds())
			}
			return err
		})
		if err != nil {
			return false
		}
		in.account(changes, types, origin, res.Outcomes)
		in.tellCheckDue(changes)
	}
	in.met.batchSize.Observe(float64(g.records))

	for _, b := range g.batches {
		last := b.records[len(b.records)-1]
		next := last.Offset + 1
		r.mu.Lock()
		owned := r.assigned[b.partition]
		if owned {
			r.applied[b.partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: next}
		}
		r.mu.Unlock()
		if owned {
			in.met.lag.WithLabelValues(partitionLabel(StorePartition(in.cfg.Lane, b.partition))).Set(float64(max(b.hwm-next, 0)))
		}
	}
	return true
}

// checkTopic applies Config.CheckTopic to a PREPARE, naming the target in
// its error.
func (in *Ingester) checkTopic(e *envelope.Envelope) error {
	if in.cfg.CheckTopic == nil {
		return nil
	}
	if err := in.cfg.CheckTopic(e.Target, e.ForwardTopic); err != nil {
		target := e.Target
		if target == "" {
			target = "the default target"
		} else {
			target = fmt.Sprintf("target %q", target)
		}
		return fmt.Errorf("not a topic %s can send to: %w", target, err)
	}
	return nil
}

// recordTime is the control record's timestamp (the producer's or the
// broker's, as the topic is configured), or now if it has none.
func recordTime(rec *kgo.Record, now time.Time) time.Time {
	if rec.Timestamp.IsZero() || rec.Timestamp.Unix() <= 0 {
		return now
	}
	return rec.Timestamp
}

// schedule resolves a PREPARE's ec-delay into its DeliverAt, counted from
// the control record's timestamp at (so a replay of the record resolves
// it the same way), and checks the result: after at, and at most
// Config.MaxDelay after it. A problem is returned as the header it is
// about and the reason, for the dead letter. Checking against the
// record's time, not the center's clock, keeps a PREPARE that waited in
// the topic (a lagging or stopped center) from being dead-lettered: its
// message is sent at once instead.
func (in *Ingester) schedule(e *envelope.Envelope, at time.Time) (field, reason string) {
	if e.Delay != 0 || !e.DeliverAt.IsZero() {
		if on, why := in.scheduling(); !on {
			field = envelope.HeaderDeliverAt
			if e.Delay != 0 {
				field = envelope.HeaderDelay
			}
			return field, why
		}
	}
	if field, reason := CheckSchedule(e, at, in.cfg.MaxDelay); field != "" {
		return field, reason
	}
	if e.Delay != 0 {
		e.DeliverAt = at.Add(e.Delay).Truncate(time.Millisecond).UTC()
		e.Delay = 0
	}
	return "", ""
}

// CheckSchedule is ingest's rule for a PREPARE's schedule read at at (the
// control record's time) with forward.max_delay maxDelay: an ec-delay of
// at most maxDelay, an ec-deliver-at after at and at most maxDelay after
// it. A problem is returned as the header it is about and the reason (the
// dead letter's, and the producer API's 400).
func CheckSchedule(e *envelope.Envelope, at time.Time, maxDelay time.Duration) (field, reason string) {
	switch {
	case e.Delay != 0:
		if e.Delay > maxDelay {
			return envelope.HeaderDelay, fmt.Sprintf("%v is more than forward.max_delay (%v)", e.Delay, maxDelay)
		}
	case !e.DeliverAt.IsZero():
		if !e.DeliverAt.After(at) {
			return envelope.HeaderDeliverAt, fmt.Sprintf("%s is not after the record's time %s", e.DeliverAt.Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
		}
		if e.DeliverAt.Sub(at) > maxDelay {
			return envelope.HeaderDeliverAt, fmt.Sprintf("%s is more than forward.max_delay (%v) after the record's time %s",
				e.DeliverAt.Format(time.RFC3339Nano), maxDelay, at.UTC().Format(time.RFC3339Nano))
		}
	}
	return "", ""
}

// scheduling is Config.Scheduling, on when unset.
func (in *Ingester) scheduling() (bool, string) {
	if in.cfg.Scheduling == nil {
		return true, ""
	}
	return in.cfg.Scheduling()
}

// ChangeOf returns the store change ingest applies for envelope e read
// from Kafka partition partition of the ingester's lane (stored as its
// store partition, lane.go) in a record stamped recordTime, at
// now: for a PREPARE the checks of processGroup that depend on neither
// the record's size nor its topic (the schedule: resolved, bounded, and
// refused while scheduling is off) and the same conversion. An error
// says why the record would be dead-lettered. It is for tools that write
// what ingest would have written without going through Kafka (ectools
// bench seeds a scheduled backlog with it).
func (in *Ingester) ChangeOf(e envelope.Envelope, partition int32, recordTime, now time.Time) (store.Change, error) {
	if e.Type == envelope.Prepare {
		if field, reason := in.schedule(&e, recordTime); reason != "" {
			return store.Change{}, &envelope.DecodeError{Partition: partition, Field: field, Reason: reason, Err: envelope.ErrInvalid}
		}
	}
	return in.change(&e, StorePartition(in.cfg.Lane, partition), now), nil
}

// partitions lists the group's partitions, for logs.
func (g *group) partitions() []int32 {
	ps := make([]int32, len(g.batches))
	for i, b := range g.batches {
		ps[i] = b.partition
	}
	return ps
}

// decode reads a kgo record as an envelope.
func (in *Ingester) decode(rec *kgo.Record) (envelope.Envelope, error) {
	return in.dec.Decode(envelope.Record{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Headers: kafkarec.Headers(rec.Headers),
	})
}

// headerType is the type label of a record from its ec-type header, and
// whether it has one (the native format).
func headerType(rec *kgo.Record) (label string, native bool) {
	for _, h := range rec.Headers {
		if h.Key == envelope.HeaderType {
			switch v := string(h.Value); v {
			case "prepare", "commit", "rollback", "cancel":
				return v, true
			}
			return "unknown", true
		}
	}
	return "unknown", false
}

// tellCheckDue tells Config.CheckDue when the batch's PREPAREs fall due
// for a check-back: the earliest and, if later, the latest. A PREPARE's
// due time is its event's time plus its delay (state.Apply), which the
// store keeps, truncated. A PREPARE whose COMMIT or ROLLBACK is in the
// same batch (most of them in a burst) needs no check-back and is not
// told: each told time costs the verifier a claim.
func (in *Ingester) tellCheckDue(changes []store.Change) {
	if in.cfg.CheckDue == nil {
		return
	}
	var decided map[store.MessageRef]bool
	for i := range changes {
		if k := changes[i].Event.Kind; k == state.KindCommit || k == state.KindRollback {
			if decided == nil {
				decided = map[store.MessageRef]bool{}
			}
			decided[store.MessageRef{BizID: changes[i].BizID, Key: changes[i].Key}] = true
		}
	}
	var first, last time.Time
	for i := range changes {
		ev := &changes[i].Event
		if ev.Kind != state.KindPrepare || ev.Body == nil || decided[store.MessageRef{BizID: changes[i].BizID, Key: changes[i].Key}] {
			continue
		}
		due := ev.At.Add(ev.Body.CheckAfter)
		if first.IsZero() || due.Before(first) {
			first = due
		}
		if due.After(last) {
			last = due
		}
	}
	if first.IsZero() {
		return
	}
	in.cfg.CheckDue(first)
	if last.After(first) {
		in.cfg.CheckDue(last)
	}
}

// change turns an envelope into a store change.
func (in *Ingester) change(e *envelope.Envelope, partition int32, now time.Time) store.Change {
	c := store.Change{BizID: e.BizID, Key: e.MessageKey, Partition: partition, Event: state.Event{At: now}}
	switch e.Type {
	case envelope.Prepare:
		c.Event.Kind = state.KindPrepare
		ok := in.cfg.orderKey(e)
		fk := e.ForwardKey
		if fk == "" {
			// One key, one partition or queue: an ordered message without
			// a forward key is keyed by its order key, or its consumers
			// could read the key's messages from several partitions.
			fk = ok
		}
		c.Event.Body = &state.Body{
			Payload:    e.Payload,
			Headers:    e.Headers,
			Target:     e.Target,
			Topic:      e.ForwardTopic,
			ForwardKey: fk,
			Tag:        e.Tag,
			Verify:     e.Verify,
			OrderKey:   ok,
			CheckAfter: in.cfg.checkAfter(e),
			DeliverAt:  e.DeliverAt,
		}
	case envelope.Commit:
		c.Event.Kind = state.KindCommit
	case envelope.Rollback:
		c.Event.Kind = state.KindRollback
	case envelope.Cancel:
		c.Event.Kind = state.KindCancel
	}
	return c
}

// account counts and logs the outcomes of an applied batch.
func (in *Ingester) account(changes []store.Change, types []envelope.Type, origin []*kgo.Record, outs []store.ChangeOutcome) {
	for i, o := range outs {
		if i >= len(changes) {
			break
		}
		c := &changes[i]
		if types[i] == envelope.Cancel && o.Err == nil {
			in.countCancel(c, o.Outcome)
		}
		switch {
		case o.Err != nil:
			in.met.envelopes.WithLabelValues(typeLabel(types[i]), resultInvalid).Inc()
			in.log.Error("envelope rejected by the store", "biz_id", c.BizID, "key", c.Key,
				"partition", origin[i].Partition, "offset", origin[i].Offset, "err", o.Err)
		case o.Effect == state.Conflict && o.LateCancel:
			in.met.envelopes.WithLabelValues(typeLabel(types[i]), resultConflict).Inc()
		case o.Effect == state.Conflict:
			in.met.envelopes.WithLabelValues(typeLabel(types[i]), resultConflict).Inc()
			in.met.conflicts.Inc()
			in.log.Warn("conflicting decision ignored: the message's first decision stands",
				"biz_id", c.BizID, "key", c.Key, "ignored", types[i].String(),
				"partition", origin[i].Partition, "offset", origin[i].Offset)
		default:
			in.met.envelopes.WithLabelValues(typeLabel(types[i]), effectResult(o.Effect)).Inc()
			if o.BodyDiffers {
				in.differing.note(in.log, in.cfg.Now(), c.BizID, c.Key, origin[i].Partition, origin[i].Offset)
			}
		}
	}
}

// countCancel counts and logs a cancel envelope's outcome.
func (in *Ingester) countCancel(c *store.Change, o state.Outcome) {
	switch {
	case o.LateCancel:
		in.met.cancels.WithLabelValues(cancelTooLate).Inc()
		in.log.Warn("cancel came after the send: the message stays sent", "biz_id", c.BizID, "key", c.Key)
	case o.Effect == state.Changed:
		in.met.cancels.WithLabelValues(cancelCancelled).Inc()
	default:
		in.met.cancels.WithLabelValues(cancelNoop).Inc()
	}
}

// retry runs f until it succeeds, with capped exponential backoff and
// jitter. It gives up when the ingester stops or, after a failure, a
// rebalance waits for this poll (returning the last error): the batch then
// stays uncommitted and is fetched again. With a non-zero until it also
// gives up, wrapping errBudget, when the next attempt would start after
// until (by Config.Now).
func (in *Ingester) retry(r *run, wanted <-chan struct{}, what string, partitions []int32, failures interface{ Inc() }, until time.Time, f func(context.Context) error) error {
	backoff := in.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		err := f(r.workCtx)
		if err == nil {
			if attempt > 1 {
				in.log.Info(what+" succeeded after retries", "partitions", partitions, "attempts", attempt)
			}
			return nil
		}
		failures.Inc()
		if r.workCtx.Err() != nil || r.pollCtx.Err() != nil {
			in.log.Warn(what+" abandoned: stopping; the batch stays uncommitted", "partitions", partitions, "err", err)
			return fmt.Errorf("%s: %w: %w", what, errStopping, err)
		}
		select {
		case <-wanted:
			in.log.Warn(what+" abandoned: a rebalance is waiting; the batch stays uncommitted", "partitions", partitions, "err", err)
			return fmt.Errorf("%s: %w: %w", what, errRebalance, err)
		default:
		}
		// Full jitter over the upper half keeps retries spread but bounded.
		wait := backoff/2 + rand.N(backoff/2+1)
		if !until.IsZero() && in.cfg.Now().Add(wait).After(until) {
			in.log.Error(what+" failed; retry budget spent", "partitions", partitions, "attempts", attempt, "err", err)
			return fmt.Errorf("%s: %w: %w", what, errBudget, err)
		}
		in.log.Error(what+" failed; retrying the same batch", "partitions", partitions,
			"attempt", attempt, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.pollCtx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w: %w", what, errStopping, err)
		case <-r.workCtx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w: %w", what, errStopping, err)
		case <-wanted:
			t.Stop()
			in.log.Warn(what+" abandoned: a rebalance is waiting; the batch stays uncommitted", "partitions", partitions, "err", err)
			return fmt.Errorf("%s: %w: %w", what, errRebalance, err)
		}
		backoff = min(backoff*2, in.cfg.RetryMax)
	}
}
