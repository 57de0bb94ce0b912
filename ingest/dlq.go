package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// Values of the cause label of eventcenter_dlq_stripped_total and
// eventcenter_dlq_dropped_total: why a dead-letter write failed for good.
const (
	causeTooLarge      = "too_large"
	causeNotAuthorized = "not_authorized"
	causeUnknownTopic  = "unknown_topic"
	causeRejected      = "rejected"
	causeRetries       = "retries_exhausted"
)

var dlqCauses = []string{causeTooLarge, causeNotAuthorized, causeUnknownTopic, causeRejected, causeRetries}

// ErrDLQTopicMissing is returned by CheckDLQTopic when the dead-letter topic
// does not exist.
var ErrDLQTopicMissing = errors.New("dead-letter topic does not exist")

// Sizes of dead letters.
const (
	// defaultBatchMax is franz-go's default ProducerBatchMaxBytes, below
	// Kafka's default max.message.bytes (1,048,588): batches of several
	// small dead letters stay within what a default broker accepts.
	defaultBatchMax = 1_000_012
	// batchFraming bounds a record batch's framing around one record: the
	// batch header (61 bytes) and the record's and its headers' length
	// fields.
	batchFraming = 2 << 10
	// dlqHeaderRoom bounds the ec-dlq-* headers added to a dead letter.
	dlqHeaderRoom = 4 << 10
	// maxReasonLen bounds the ec-dlq-reason and ec-dlq-value-dropped
	// headers.
	maxReasonLen = 1 << 10
	// A copy without value keeps the key up to strippedKeyMax bytes and
	// the original headers up to strippedHeadersMax bytes.
	strippedKeyMax     = 4 << 10
	strippedHeadersMax = 32 << 10
)

// dlqBatchMax is the producer batch limit for dead letters written alone:
// a malformed record of MaxPayload with the headers a valid one may carry,
// plus the ec-dlq-* headers, fits.
func (c *Config) dlqBatchMax() int32 {
	return int32(min(c.maxRecord()+dlqHeaderRoom+batchFraming, 1<<30))
}

// deadLetter is a malformed record on its way to the dead-letter topic.
type deadLetter struct {
	src    *kgo.Record
	err    error  // why it is malformed
	reason string // bounded label of err
	typ    string // envelope type label

	// written is the copy that was written (nil: none).
	written *kgo.Record
	// fullErr and cause say why the full copy was not written.
	fullErr error
	cause   string
	// dropErr is why the copy without value was not written either.
	dropErr error
}

// stripped reports whether the copy written left the value out.
func (d *deadLetter) stripped() bool { return d.written != nil && d.fullErr != nil }

// writeDeadLetters writes each dead letter in full or, when that fails for
// good (too large, not authorized, no topic, rejected, or transient errors
// for longer than DLQRetryBudget), without its value; when that fails too
// the record is dropped. It returns an error only when the ingester stops or
// a rebalance waits (the batch is then abandoned and fetched again); a
// failing dead-letter topic never holds the partition longer than twice the
// budget.
func (in *Ingester) writeDeadLetters(r *run, wanted <-chan struct{}, parts []int32, dls []*deadLetter) error {
	full := make([]*kgo.Record, len(dls))
	for i, d := range dls {
		full[i] = in.fullCopy(d)
	}
	failed, err := in.produceBounded(r, wanted, parts, "produce dead letters", full)
	if err != nil {
		return err
	}
	for i, d := range dls {
		if failed[i] == nil {
			d.written = full[i]
		}
	}
	var again []*deadLetter
	var stripped []*kgo.Record
	for i, d := range dls {
		if failed[i] == nil {
			continue
		}
		d.fullErr = failed[i]
		d.cause = dlqCause(failed[i])
		again = append(again, d)
		stripped = append(stripped, in.strippedCopy(d))
	}
	if len(again) == 0 {
		return nil
	}
	failed, err = in.produceBounded(r, wanted, parts, "produce dead letters without their values", stripped)
	if err != nil {
		return err
	}
	for i, d := range again {
		if failed[i] == nil {
			d.written = stripped[i]
		} else {
			d.dropErr = failed[i]
		}
	}
	return nil
}

// errBudget ends the retries of a write that kept failing.
var errBudget = errors.New("retry budget spent")

// produceBounded produces recs (one per dead letter) and retries those that
// failed transiently, with backoff, for at most DLQRetryBudget. It returns
// each record's final error (nil: written), or an error when the ingester
// stops or a rebalance waits.
func (in *Ingester) produceBounded(r *run, wanted <-chan struct{}, parts []int32, what string, recs []*kgo.Record) ([]error, error) {
	errs := make([]error, len(recs))
	pending := make([]int, len(recs))
	for i := range pending {
		pending[i] = i
	}
	until := in.cfg.Now().Add(in.cfg.DLQRetryBudget)
	err := in.retry(r, wanted, what, parts, in.met.dlqErrs, until, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, until.Sub(in.cfg.Now()))
		defer cancel()
		batch := make([]*kgo.Record, len(pending))
		for i, j := range pending {
			batch[i] = recs[j]
		}
		results := in.produce(ctx, r, batch)
		var next []int
		var first error
		for i, j := range pending {
			errs[j] = results[i]
			if results[i] == nil || dlqCause(results[i]) != causeRetries {
				continue
			}
			next = append(next, j)
			if first == nil {
				first = results[i]
			}
		}
		pending = next
		return first
	})
	if err != nil && !errors.Is(err, errBudget) {
		return nil, err
	}
	for _, j := range pending {
		errs[j] = fmt.Errorf("%w after %v: %w", errBudget, in.cfg.DLQRetryBudget, errs[j])
	}
	return errs, nil
}

// produce writes recs and returns each one's error. Records that fit in a
// batch of franz-go's default size are produced together through the
// consumer's client (those refused as too large with others are tried
// again alone); larger ones one at a time through a client whose batch
// limit fits them, so that no batch of several records grows past what a
// broker with default settings accepts.
func (in *Ingester) produce(ctx context.Context, r *run, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	var small []*kgo.Record
	var smallAt, big []int
	for i, rec := range recs {
		// franz-go keeps the context of a record's first produce; a retry
		// must use its own.
		rec.Context = ctx
		if r.big != nil && recordSize(rec)+batchFraming > defaultBatchMax {
			big = append(big, i)
			continue
		}
		small = append(small, rec)
		smallAt = append(smallAt, i)
	}
	if len(small) > 0 {
		for i, res := range r.cl.ProduceSync(ctx, small...) {
			errs[smallAt[i]] = res.Err
		}
	}
	if len(small) > 1 {
		// A broker refuses a batch larger than the topic's
		// max.message.bytes as a whole: whoever was refused with others
		// is tried alone before being called too large.
		for i, rec := range small {
			if dlqCause(errs[smallAt[i]]) == causeTooLarge {
				errs[smallAt[i]] = r.cl.ProduceSync(ctx, rec).FirstErr()
			}
		}
	}
	for _, i := range big {
		errs[i] = r.big.ProduceSync(ctx, recs[i]).FirstErr()
	}
	return errs
}

// recordSize is a record's key, value and headers in bytes.
func recordSize(rec *kgo.Record) int { return kafkarec.Size(rec) }

// dlqCause classifies a dead-letter write error: what no retry can fix
// (too large, not authorized, no such topic, rejected by the broker), or
// causeRetries for what a retry may fix (timeouts, broker errors franz-go
// gave up on, errors we do not know).
func dlqCause(err error) string {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return causeTooLarge
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		return causeNotAuthorized
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return causeUnknownTopic
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.PolicyViolation),
		errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.CorruptMessage):
		return causeRejected
	}
	return causeRetries
}

// fullCopy copies a malformed record for the dead-letter topic, with why
// and where it came from.
func (in *Ingester) fullCopy(d *deadLetter) *kgo.Record {
	rec := d.src
	hs := make([]kgo.RecordHeader, 0, len(rec.Headers)+4)
	hs = append(hs, rec.Headers...)
	hs = in.appendOrigin(hs, rec, d.err)
	return &kgo.Record{
		Topic:     in.cfg.DLQTopic,
		Key:       rec.Key,
		Value:     rec.Value,
		Headers:   hs,
		Timestamp: rec.Timestamp,
	}
}

// strippedCopy is the dead letter of a record whose full copy could not be
// written: no value, the key and original headers within bounds, and why.
func (in *Ingester) strippedCopy(d *deadLetter) *kgo.Record {
	rec := d.src
	var omitted []string
	key := rec.Key
	if len(key) > strippedKeyMax {
		key = nil
		omitted = append(omitted, "key")
	}
	hs := make([]kgo.RecordHeader, 0, len(rec.Headers)+7)
	room, left := strippedHeadersMax, 0
	for _, h := range rec.Headers {
		if n := len(h.Key) + len(h.Value); n <= room {
			room -= n
			hs = append(hs, h)
			continue
		}
		left++
	}
	if left > 0 {
		omitted = append(omitted, "headers:"+strconv.Itoa(left))
	}
	hs = in.appendOrigin(hs, rec, d.err)
	hs = append(hs,
		kgo.RecordHeader{Key: envelope.HeaderDLQValueDropped, Value: []byte(truncate(d.fullErr.Error(), maxReasonLen))},
		kgo.RecordHeader{Key: envelope.HeaderDLQSize, Value: []byte(strconv.Itoa(recordSize(rec)))},
	)
	if len(omitted) > 0 {
		hs = append(hs, kgo.RecordHeader{Key: envelope.HeaderDLQOmitted, Value: []byte(strings.Join(omitted, ","))})
	}
	return &kgo.Record{Topic: in.cfg.DLQTopic, Key: key, Headers: hs, Timestamp: rec.Timestamp}
}

// appendOrigin appends the ec-dlq-* headers saying why and where from.
func (in *Ingester) appendOrigin(hs []kgo.RecordHeader, rec *kgo.Record, err error) []kgo.RecordHeader {
	return append(hs,
		kgo.RecordHeader{Key: envelope.HeaderDLQReason, Value: []byte(truncate(err.Error(), maxReasonLen))},
		kgo.RecordHeader{Key: envelope.HeaderDLQTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: envelope.HeaderDLQPartition, Value: []byte(strconv.FormatInt(int64(rec.Partition), 10))},
		kgo.RecordHeader{Key: envelope.HeaderDLQOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
	)
}

// truncate cuts s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// accountDeadLetters counts and logs what became of each dead letter.
func (in *Ingester) accountDeadLetters(dls []*deadLetter) {
	for _, d := range dls {
		in.met.envelopes.WithLabelValues(d.typ, resultInvalid).Inc()
		rec := d.src
		switch {
		case d.written == nil:
			in.met.dlqDropped.WithLabelValues(d.cause).Inc()
			in.log.Error("malformed control record dropped: neither it nor a copy without its value could be written to the dead-letter topic; skipped",
				"dlq_topic", in.cfg.DLQTopic, "partition", rec.Partition, "offset", rec.Offset,
				"key", truncate(string(rec.Key), 320), "size", recordSize(rec), "reason", d.err,
				"cause", d.cause, "full_copy_err", d.fullErr, "err", d.dropErr)
		case d.stripped():
			in.met.dlq.WithLabelValues(d.reason).Inc()
			in.met.dlqStripped.WithLabelValues(d.cause).Inc()
			in.log.Warn("malformed control record written to the dead-letter topic without its value",
				"dlq_topic", in.cfg.DLQTopic, "partition", rec.Partition, "offset", rec.Offset,
				"size", recordSize(rec), "reason", d.err, "cause", d.cause, "err", d.fullErr)
		default:
			in.met.dlq.WithLabelValues(d.reason).Inc()
		}
	}
}

// CheckDLQTopic asks the cluster whether the dead-letter topic exists. It
// returns an error wrapping ErrDLQTopicMissing when it does not (the
// ingester does not create it: malformed records would then be dropped,
// logged and counted in eventcenter_dlq_dropped_total), or the error of the
// request. A started ingester asks with its own client, otherwise a
// short-lived one is made.
func (in *Ingester) CheckDLQTopic(ctx context.Context) error {
	in.mu.Lock()
	r := in.r
	in.mu.Unlock()
	var cl *kgo.Client
	if r != nil && r.cl != nil {
		cl = r.cl
	} else {
		opts := append([]kgo.Opt{kgo.SeedBrokers(in.cfg.Brokers...)}, in.cfg.ClientOptions...)
		tmp, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("ingest: check dead-letter topic %q: %w", in.cfg.DLQTopic, err)
		}
		defer tmp.Close()
		cl = tmp
	}
	return checkTopic(ctx, kadm.NewClient(cl), in.cfg.DLQTopic)
}

// checkTopic looks topic up in the cluster's metadata.
func checkTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("ingest: check dead-letter topic %q: %w", topic, err)
	}
	td, ok := tds[topic]
	switch {
	case !ok, errors.Is(td.Err, kerr.UnknownTopicOrPartition), errors.Is(td.Err, kerr.UnknownTopicID):
		return fmt.Errorf("ingest: %w: %q (malformed control records cannot be set aside until it is created: they are dropped, logged and counted in eventcenter_dlq_dropped_total)", ErrDLQTopicMissing, topic)
	case td.Err != nil:
		return fmt.Errorf("ingest: check dead-letter topic %q: %w", topic, td.Err)
	}
	return nil
}

// checkDLQAtStart logs whether the dead-letter topic exists, and creates
// it first when it is missing and Config.CreateDLQPartitions allows.
func (in *Ingester) checkDLQAtStart(ctx context.Context, cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	err := checkTopic(ctx, adm, in.cfg.DLQTopic)
	if errors.Is(err, ErrDLQTopicMissing) && in.cfg.CreateDLQPartitions > 0 {
		if cerr := createTopic(ctx, adm, in.cfg.DLQTopic, in.cfg.CreateDLQPartitions); cerr != nil {
			in.log.Error("dead-letter topic missing and creating it failed: create it", "dlq_topic", in.cfg.DLQTopic, "err", cerr)
			return
		}
		in.log.Info("created the dead-letter topic (kafka.create_topics)", "dlq_topic", in.cfg.DLQTopic, "partitions", in.cfg.CreateDLQPartitions)
		return
	}
	switch {
	case err == nil:
		in.log.Info("dead-letter topic found", "dlq_topic", in.cfg.DLQTopic)
	case errors.Is(err, ErrDLQTopicMissing):
		in.log.Error("dead-letter topic missing: create it", "dlq_topic", in.cfg.DLQTopic, "err", err)
	default:
		in.log.Warn("could not check the dead-letter topic", "dlq_topic", in.cfg.DLQTopic, "err", err)
	}
}

// createTopic creates topic with partitions partitions and the brokers'
// default replication factor; a topic created meanwhile by someone else
// counts as created.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic) //nolint:gosec // bounded by config validation (kafka.control_partitions)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("ingest: create dead-letter topic %q: %w", topic, err)
	}
	return nil
}

// forwardedSize is the size of the record a PREPARE is forwarded as (value,
// forward key, headers and ec-id), as the forwarder builds it.
func forwardedSize(e *envelope.Envelope) int { return ForwardedSize(e) }

// ForwardedSize is the size of the record forwarded for a PREPARE:
// payload, forward key, forwarded headers and ec-id. Ingest dead-letters a
// PREPARE whose forwarded size exceeds MaxPayload + RecordOverhead (the
// producer HTTP API refuses it up front by the same rule).
func ForwardedSize(e *envelope.Envelope) int {
	return len(e.Payload) + len(e.ForwardKey) + envelope.ForwardHeadersSize(e.Headers, len(e.BizID)+1+len(e.MessageKey))
}
