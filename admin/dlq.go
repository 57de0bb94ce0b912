package admin

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// DLQ reads the dead-letter topic and replays records from it.
type DLQ interface {
	// List returns up to limit records after the cursor ("" from the
	// start) and the cursor of the next page ("" when there is none).
	List(ctx context.Context, limit int, after string) ([]DLQRecord, string, error)
	// Replay sends the record at partition/offset back to the control
	// topic, changed by fix, and returns it as sent (without its ec-dlq-*
	// headers). A record that would be dead-lettered again is not sent: the
	// error wraps ErrReplayInvalid; a fix that does not apply to the record
	// wraps ErrBadReplayFix.
	Replay(ctx context.Context, partition int32, offset int64, fix ReplayFix) (DLQRecord, error)
}

// ReplayFix is what an operator supplies to repair a dead-letter record
// before it is replayed. Zero fields change nothing.
type ReplayFix struct {
	// Topic sets the forward topic of a PREPARE: its ec-topic header, or
	// forwardTopic of a MiddlewareMessage JSON. This is how an orphan
	// COMMIT whose PREPARE was dead-lettered for a missing or bad topic
	// gets its body.
	Topic string
}

// Validate checks the fix's fields on their own.
func (f ReplayFix) Validate() error {
	if f.Topic == "" {
		return nil
	}
	e := envelope.Envelope{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: f.Topic}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("%w: topic %q: %v", ErrBadReplayFix, f.Topic, err)
	}
	return nil
}

func (f ReplayFix) zero() bool { return f == ReplayFix{} }

var (
	// ErrReplayInvalid: the record, even with the fix, is not a valid
	// envelope; replayed, it would only be dead-lettered again.
	ErrReplayInvalid = errors.New("dead-letter record would be dead-lettered again")
	// ErrBadReplayFix: the fix is malformed or does not apply to the record.
	ErrBadReplayFix = errors.New("bad replay fix")
)

// envelopeRecord returns the record as the envelope decoder reads it.
func (r DLQRecord) envelopeRecord() envelope.Record {
	return envelope.Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Headers: r.Headers}
}

// prepareForReplay drops the ec-dlq-* headers of a dead-letter record,
// applies the fix, and checks that the result is a valid envelope (the
// payload limit is the ingest's and is not checked here).
func prepareForReplay(src DLQRecord, fix ReplayFix) (DLQRecord, error) {
	for _, h := range src.Headers {
		// A copy written without its value (too large for the DLQ, or
		// refused by it): replayed, the PREPARE would be stored with an
		// empty body and could be forwarded empty.
		if h.Key == envelope.HeaderDLQValueDropped {
			return DLQRecord{}, fmt.Errorf("%w: this copy was written without its value (%s); read the original from the control topic at ec-dlq-partition/ec-dlq-offset and have the producer send it again",
				ErrReplayInvalid, h.Value)
		}
	}
	out := DLQRecord{Partition: src.Partition, Offset: src.Offset, Timestamp: src.Timestamp, Key: src.Key, Value: src.Value}
	native := false
	typ := ""
	for _, h := range src.Headers {
		if strings.HasPrefix(h.Key, envelope.HeaderDLQPrefix) {
			continue
		}
		if h.Key == envelope.HeaderType {
			native, typ = true, string(h.Value)
		}
		if fix.Topic != "" && h.Key == envelope.HeaderTopic {
			continue // replaced below
		}
		out.Headers = append(out.Headers, h)
	}
	if fix.Topic != "" {
		if native {
			if typ != "prepare" {
				return DLQRecord{}, fmt.Errorf("%w: topic: the record is a %q, only a prepare carries a forward topic", ErrBadReplayFix, typ)
			}
			out.Headers = append(out.Headers, envelope.Header{Key: envelope.HeaderTopic, Value: []byte(fix.Topic)})
		} else {
			v, err := compatWithTopic(src.Value, fix.Topic)
			if err != nil {
				return DLQRecord{}, err
			}
			out.Value = v
		}
	}
	if _, err := (envelope.Decoder{MaxPayload: -1}).Decode(out.envelopeRecord()); err != nil {
		hint := ""
		if fix.zero() {
			hint = " (fix the producer, or supply what is missing, e.g. the forward topic)"
		}
		return DLQRecord{}, fmt.Errorf("%w: %v%s", ErrReplayInvalid, err, hint)
	}
	return out, nil
}

// compatWithTopic sets forwardTopic in a MiddlewareMessage JSON prepare.
func compatWithTopic(value []byte, topic string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("%w: topic: the record has no ec-type header and is not a MiddlewareMessage JSON object: %v", ErrBadReplayFix, err)
	}
	if status := strings.TrimSpace(string(m["messageStatus"])); status != "1" {
		return nil, fmt.Errorf("%w: topic: the record is not a prepare (messageStatus %s), only a prepare carries a forward topic", ErrBadReplayFix, status)
	}
	t, err := json.Marshal(topic)
	if err != nil {
		return nil, fmt.Errorf("encode topic: %w", err)
	}
	m["forwardTopic"] = t
	v, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode MiddlewareMessage: %w", err)
	}
	return v, nil
}

// DLQRecord is one record of the dead-letter topic.
type DLQRecord struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte
	// Headers are all the record's headers, ec-dlq-* included.
	Headers []envelope.Header
}

// Reason returns the ec-dlq-reason header.
func (r DLQRecord) Reason() string {
	for _, h := range r.Headers {
		if h.Key == envelope.HeaderDLQReason {
			return string(h.Value)
		}
	}
	return ""
}

func (r DLQRecord) toAPI() adminapi.DLQRecord {
	a := adminapi.DLQRecord{
		Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC(),
		Key: string(r.Key), Reason: r.Reason(),
		ValueBase64: base64.StdEncoding.EncodeToString(r.Value), ValueText: textOf(r.Value),
	}
	var rest []envelope.Header
	for _, h := range r.Headers {
		if name, ok := strings.CutPrefix(h.Key, envelope.HeaderDLQPrefix); ok {
			if a.Info == nil {
				a.Info = map[string]string{}
			}
			a.Info[name] = string(h.Value)
			continue
		}
		rest = append(rest, h)
	}
	a.Headers = headersOf(rest)
	return a
}

var (
	// ErrDLQNotFound: no dead-letter record at that partition and offset.
	ErrDLQNotFound = errors.New("dead-letter record not found")
	// ErrBadDLQCursor: a cursor List did not make.
	ErrBadDLQCursor = errors.New("bad dead-letter cursor")
)

// KafkaDLQ is a DLQ on a Kafka dead-letter topic. It reads the topic
// directly (no consumer group, nothing committed) with a short-lived client
// built from the given client's connection options (seed brokers, dialer,
// TLS, SASL, client id), and replays with the given client.
type KafkaDLQ struct {
	cl      *kgo.Client
	adm     *kadm.Client
	dlq     string
	control string
	// PollTimeout bounds one wait for records while reading (default 2s).
	PollTimeout time.Duration
	// mu serializes reads (each opens connections; one at a time is enough
	// for an operator screen).
	mu sync.Mutex
}

// NewKafkaDLQ returns a DLQ reading dlqTopic and replaying to controlTopic.
// client is used to produce replays and to look up offsets; it is not
// closed by KafkaDLQ.
func NewKafkaDLQ(client *kgo.Client, dlqTopic, controlTopic string) *KafkaDLQ {
	return &KafkaDLQ{cl: client, adm: kadm.NewClient(client), dlq: dlqTopic, control: controlTopic, PollTimeout: 2 * time.Second}
}

// readerOpts copies the connection options of the main client.
func (d *KafkaDLQ) readerOpts() []kgo.Opt {
	var opts []kgo.Opt
	if v, ok := d.cl.OptValue(kgo.SeedBrokers).([]string); ok {
		opts = append(opts, kgo.SeedBrokers(v...))
	}
	if v, ok := d.cl.OptValue(kgo.DialTimeout).(time.Duration); ok && v > 0 {
		opts = append(opts, kgo.DialTimeout(v))
	}
	if vs := d.cl.OptValues(kgo.ClientID); len(vs) == 2 && vs[1] == true {
		opts = append(opts, kgo.ClientID(vs[0].(string)+"-dlq-reader"))
	}
	// With DialTLSConfig the client reports a Dialer of its own too, and
	// the two options together are refused: copy TLS, else the dialer.
	if v, ok := d.cl.OptValue(kgo.DialTLSConfig).(*tls.Config); ok && v != nil {
		opts = append(opts, kgo.DialTLSConfig(v))
	} else if v := d.cl.OptValue(kgo.Dialer); v != nil {
		if fn, ok := v.(func(ctx context.Context, network, host string) (net.Conn, error)); ok && fn != nil {
			opts = append(opts, kgo.Dialer(fn))
		}
	}
	if v, ok := d.cl.OptValue(kgo.SASL).([]sasl.Mechanism); ok && len(v) > 0 {
		opts = append(opts, kgo.SASL(v...))
	}
	return opts
}

// cursor is the next offset to read per partition.
type cursor map[int32]int64

func (c cursor) String() string {
	ps := make([]int32, 0, len(c))
	for p := range c {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", p, c[p])
	}
	return b.String()
}

func parseCursor(s string) (cursor, error) {
	c := cursor{}
	if s == "" {
		return c, nil
	}
	for _, part := range strings.Split(s, ",") {
		ps, os, ok := strings.Cut(part, ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		o, err2 := strconv.ParseInt(os, 10, 64)
		if !ok || err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%w %q", ErrBadDLQCursor, s)
		}
		c[int32(p)] = o
	}
	return c, nil
}

// List reads up to limit records, partition by partition in order, from the
// cursor's positions (or each partition's start) up to the end offsets seen
// when the call began.
func (d *KafkaDLQ) List(ctx context.Context, limit int, after string) ([]DLQRecord, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("list dead-letter topic: limit %d", limit)
	}
	cur, err := parseCursor(after)
	if err != nil {
		return nil, "", err
	}
	starts, err := d.adm.ListStartOffsets(ctx, d.dlq)
	if err != nil {
		return nil, "", fmt.Errorf("list start offsets of %s: %w", d.dlq, err)
	}
	ends, err := d.adm.ListEndOffsets(ctx, d.dlq)
	if err != nil {
		return nil, "", fmt.Errorf("list end offsets of %s: %w", d.dlq, err)
	}
	if err := ends.Error(); err != nil {
		return nil, "", fmt.Errorf("list end offsets of %s: %w", d.dlq, err)
	}
	// from/to per partition that still has records to read.
	from, to := map[int32]int64{}, map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		start := int64(0)
		if s, ok := starts.Lookup(d.dlq, o.Partition); ok && s.Err == nil {
			start = s.Offset
		}
		f := max(cur[o.Partition], start)
		if f < o.Offset {
			from[o.Partition], to[o.Partition] = f, o.Offset
		}
	})
	if len(from) == 0 {
		return nil, "", nil
	}
	got, err := d.read(ctx, from, to, limit)
	if err != nil {
		return nil, "", err
	}
	// Page: partitions in order, then offsets; the cursor moves each
	// partition past what the page shows.
	ps := make([]int32, 0, len(from))
	for p := range from {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var page []DLQRecord
	next := cursor{}
	for p, o := range cur {
		next[p] = o
	}
	more := false
	for _, p := range ps {
		recs := got[p]
		room := limit - len(page)
		cut := len(recs) > room
		if cut {
			recs = recs[:room]
		}
		page = append(page, recs...)
		switch {
		case cut:
			if len(recs) > 0 {
				next[p] = recs[len(recs)-1].Offset + 1
			}
			more = true
		case len(recs) >= limit:
			next[p] = recs[len(recs)-1].Offset + 1
			more = more || next[p] < to[p]
		default:
			// Read to its end (the rest, if any, were gaps).
			next[p] = to[p]
		}
	}
	if !more {
		return page, "", nil
	}
	return page, next.String(), nil
}

// read fetches up to limit records per partition from[p] <= offset < to[p].
// It stops when every partition has enough or reached its end, or when a
// poll brings nothing within PollTimeout.
func (d *KafkaDLQ) read(ctx context.Context, from, to map[int32]int64, limit int) (map[int32][]DLQRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	offs := map[int32]kgo.Offset{}
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	opts := append(d.readerOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.dlq: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	rc, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("open dead-letter reader: %w", err)
	}
	defer rc.Close()
	got := map[int32][]DLQRecord{}
	done := func(p int32) bool {
		rs := got[p]
		return len(rs) >= limit || (len(rs) > 0 && rs[len(rs)-1].Offset+1 >= to[p])
	}
	for {
		all := true
		for p := range from {
			all = all && done(p)
		}
		if all {
			return got, nil
		}
		pctx, cancel := context.WithTimeout(ctx, d.PollTimeout)
		fs := rc.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read dead-letter topic: %w", err)
		}
		n := 0
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("read dead-letter topic %s: %w", d.dlq, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Offset >= to[r.Partition] || done(r.Partition) {
				return
			}
			got[r.Partition] = append(got[r.Partition], fromKgo(r))
		})
		if n == 0 {
			// Nothing within the poll timeout: the rest are gaps
			// (transaction markers, compaction).
			return got, nil
		}
	}
}

func fromKgo(r *kgo.Record) DLQRecord {
	return DLQRecord{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value,
		Headers: kafkarec.Headers(r.Headers)}
}

// Replay reads the record at partition/offset, drops its ec-dlq-* headers,
// applies fix, checks that the result is a valid envelope, and produces it
// to the control topic.
func (d *KafkaDLQ) Replay(ctx context.Context, partition int32, offset int64, fix ReplayFix) (DLQRecord, error) {
	starts, err := d.adm.ListStartOffsets(ctx, d.dlq)
	if err != nil {
		return DLQRecord{}, fmt.Errorf("list start offsets of %s: %w", d.dlq, err)
	}
	ends, err := d.adm.ListEndOffsets(ctx, d.dlq)
	if err != nil {
		return DLQRecord{}, fmt.Errorf("list end offsets of %s: %w", d.dlq, err)
	}
	s, ok1 := starts.Lookup(d.dlq, partition)
	e, ok2 := ends.Lookup(d.dlq, partition)
	if !ok1 || !ok2 || s.Err != nil || e.Err != nil || offset < s.Offset || offset >= e.Offset {
		return DLQRecord{}, fmt.Errorf("%w: %s %d/%d", ErrDLQNotFound, d.dlq, partition, offset)
	}
	recs, err := d.read(ctx, map[int32]int64{partition: offset}, map[int32]int64{partition: offset + 1}, 1)
	if err != nil {
		return DLQRecord{}, err
	}
	rs := recs[partition]
	if len(rs) == 0 || rs[0].Offset != offset {
		return DLQRecord{}, fmt.Errorf("%w: %s %d/%d", ErrDLQNotFound, d.dlq, partition, offset)
	}
	out, err := prepareForReplay(rs[0], fix)
	if err != nil {
		return DLQRecord{}, err
	}
	rec := &kgo.Record{Topic: d.control, Key: out.Key, Value: out.Value, Headers: kafkarec.KgoHeaders(out.Headers)}
	if err := d.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return DLQRecord{}, fmt.Errorf("produce replay to %s: %w", d.control, err)
	}
	return out, nil
}
