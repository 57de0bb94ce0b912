package admin

import (
	"bytes"
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
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// DLQ reads the dead-letter topic and replays records from it.
type DLQ interface {
	// List returns one page of records after q.After ("" from the start)
	// and the cursor of the next page ("" when there is none). The page
	// holds at most q.Limit records and stops adding records once their
	// whole sizes would pass q.MaxBytes (the first record always fits);
	// values and header values longer than q.Preview are cut to it (the
	// record's ValueSize keeps the whole size).
	List(ctx context.Context, q DLQQuery) ([]DLQRecord, string, error)
	// Get returns the whole record at partition/offset (ErrDLQNotFound
	// when there is none).
	Get(ctx context.Context, partition int32, offset int64) (DLQRecord, error)
	// Replay sends the record at partition/offset back to the control
	// topic, changed by fix, and returns it as sent (without its ec-dlq-*
	// headers). A record that would be dead-lettered again is not sent: the
	// error wraps ErrReplayInvalid; a fix that does not apply to the record
	// wraps ErrBadReplayFix.
	Replay(ctx context.Context, partition int32, offset int64, fix ReplayFix) (DLQRecord, error)
}

// DLQQuery asks for one page of the dead-letter topic.
type DLQQuery struct {
	// Limit is the most records the page holds (at least 1).
	Limit int
	// After is the cursor of a previous page ("" from the start).
	After string
	// MaxBytes bounds the page by the whole size (key, value, headers) of
	// its records: a record that would pass it ends the page, unless it is
	// the first. 0 means no bound.
	MaxBytes int
	// Preview cuts values and header values longer than this many bytes;
	// 0 keeps them whole.
	Preview int
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
	return envelope.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Headers: r.Headers}
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
	out := DLQRecord{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset, Timestamp: src.Timestamp, Key: src.Key, Value: src.Value, ValueSize: len(src.Value)}
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
	// Topic is the dead-letter topic the record was read from.
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	// Value is the value, or its first DLQQuery.Preview bytes in a list.
	Value []byte
	// ValueSize is the whole value's size (len(Value) when it is whole;
	// 0 is read as len(Value)).
	ValueSize int
	// Headers are all the record's headers, ec-dlq-* included (values cut
	// to DLQQuery.Preview in a list).
	Headers []envelope.Header
	// size is the whole record's size (key, value, headers) as read.
	size int
}

// valueSize is the whole value's size.
func (r DLQRecord) valueSize() int { return max(r.ValueSize, len(r.Value)) }

// Reason returns the ec-dlq-reason header.
func (r DLQRecord) Reason() string {
	for _, h := range r.Headers {
		if h.Key == envelope.HeaderDLQReason {
			return string(h.Value)
		}
	}
	return ""
}

// toAPI converts a record for the API: the value and header values are cut
// to preview bytes (0: whole) and each is encoded once, as text when the
// shown bytes are valid UTF-8, else as base64.
func (r DLQRecord) toAPI(preview int) adminapi.DLQRecord {
	a := adminapi.DLQRecord{
		Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC(),
		Key: string(r.Key), Reason: r.Reason(), ValueSize: r.valueSize(),
	}
	var cut bool
	a.Value, a.ValueEncoding, cut = encodeValue(r.Value, preview)
	a.ValueTruncated = cut || len(r.Value) < a.ValueSize
	for _, h := range r.Headers {
		if name, ok := strings.CutPrefix(h.Key, envelope.HeaderDLQPrefix); ok {
			if a.Info == nil {
				a.Info = map[string]string{}
			}
			v, _, _ := encodeValue(h.Value, preview)
			a.Info[name] = v
			continue
		}
		v, enc, _ := encodeValue(h.Value, preview)
		ah := adminapi.Header{Key: h.Key}
		if enc == adminapi.EncodingText {
			ah.Value = &v
		} else {
			ah.ValueBase64 = v
		}
		a.Headers = append(a.Headers, ah)
	}
	return a
}

// encodeValue returns v, cut to n bytes when n > 0 and v is longer, as text
// when those bytes are valid UTF-8 (a cut does not split a character) and
// as base64 otherwise. cut tells whether it was cut.
func encodeValue(v []byte, n int) (s, enc string, cut bool) {
	if n > 0 && len(v) > n {
		c := v[:n]
		// Back off over a character split by the cut.
		for i := 0; i < utf8.UTFMax && len(c) > 0 && !utf8.Valid(c); i++ {
			c = c[:len(c)-1]
		}
		if !utf8.Valid(c) {
			c = v[:n]
		}
		v, cut = c, true
	}
	if utf8.Valid(v) {
		return string(v), adminapi.EncodingText, cut
	}
	return base64.StdEncoding.EncodeToString(v), adminapi.EncodingBase64, cut
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
	// PollTimeout bounds one wait for records while reading (default
	// 10s). A read ends when it reaches the partitions' ends; the wait only
	// runs out on a slow broker, or on a range whose end was compacted
	// away, and the read then fails rather than take it for the end.
	PollTimeout time.Duration
	// mu serializes reads (each opens connections; one at a time is enough
	// for an operator screen).
	mu sync.Mutex
}

// NewKafkaDLQ returns a DLQ reading dlqTopic and replaying to controlTopic.
// client is used to produce replays and to look up offsets; it is not
// closed by KafkaDLQ.
func NewKafkaDLQ(client *kgo.Client, dlqTopic, controlTopic string) *KafkaDLQ {
	return &KafkaDLQ{cl: client, adm: kadm.NewClient(client), dlq: dlqTopic, control: controlTopic, PollTimeout: 10 * time.Second}
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

// List reads one page, partition by partition in order, from the cursor's
// positions (or each partition's start) up to the end offsets seen when the
// call began. It keeps only previews of the values it reads, and stops
// reading a partition once it holds q.Limit records or q.MaxBytes of it.
func (d *KafkaDLQ) List(ctx context.Context, q DLQQuery) ([]DLQRecord, string, error) {
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("list dead-letter topic: limit %d", q.Limit)
	}
	cur, err := parseCursor(q.After)
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
	got, full, stalled, err := d.read(ctx, from, to, q)
	if err != nil {
		return nil, "", err
	}
	if len(stalled) > 0 && len(got) == 0 {
		return nil, "", d.stalledErr(from, to, stalled)
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
	more, used := false, 0
	for _, p := range ps {
		recs := got[p]
		n := 0
		for n < len(recs) && len(page) < q.Limit &&
			(q.MaxBytes <= 0 || len(page) == 0 || used+recs[n].size <= q.MaxBytes) {
			used += recs[n].size
			page = append(page, recs[n])
			n++
		}
		switch {
		case n < len(recs):
			// Cut by the page's count or bytes.
			if n > 0 {
				next[p] = recs[n-1].Offset + 1
			}
			more = true
		case full[p] || stalled[p]:
			// The read stopped early on this partition: its count or
			// bytes, or nothing more arrived in time. Read on from there.
			if n > 0 {
				next[p] = recs[n-1].Offset + 1
			}
			more = more || next[p] < to[p]
		default:
			// Read to its end.
			next[p] = to[p]
		}
	}
	if !more {
		return page, "", nil
	}
	return page, next.String(), nil
}

// Get reads the whole record at partition/offset.
func (d *KafkaDLQ) Get(ctx context.Context, partition int32, offset int64) (DLQRecord, error) {
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
	from, to := map[int32]int64{partition: offset}, map[int32]int64{partition: offset + 1}
	recs, _, stalled, err := d.read(ctx, from, to, DLQQuery{Limit: 1})
	if err != nil {
		return DLQRecord{}, err
	}
	if stalled[partition] {
		return DLQRecord{}, d.stalledErr(from, to, stalled)
	}
	rs := recs[partition]
	if len(rs) == 0 || rs[0].Offset != offset {
		return DLQRecord{}, fmt.Errorf("%w: %s %d/%d", ErrDLQNotFound, d.dlq, partition, offset)
	}
	return rs[0], nil
}

// stalledErr says which partitions a read could not get to their end:
// the operator sees that the broker did not answer in time, never an
// empty page taken for the end of the topic.
func (d *KafkaDLQ) stalledErr(from, to map[int32]int64, stalled map[int32]bool) error {
	ps := make([]int32, 0, len(stalled))
	for p := range stalled {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	where := make([]string, len(ps))
	for i, p := range ps {
		where[i] = fmt.Sprintf("partition %d from offset %d (end %d)", p, from[p], to[p])
	}
	return fmt.Errorf("read dead-letter topic %s: nothing arrived within %s at %s: the broker is slow or unreachable; try again",
		d.dlq, d.PollTimeout, strings.Join(where, ", "))
}

// read fetches, per partition, records from[p] <= offset < to[p] until it
// holds q.Limit records or q.MaxBytes of it (full reports those partitions),
// keeping q.Preview bytes of each value. It stops when every partition is
// full or reached its end, or when a poll brings nothing within
// PollTimeout: stalled then names the partitions that had not reached
// their end. Transaction markers come as control records, so a range
// that ends in markers is read to its end rather than waited on.
func (d *KafkaDLQ) read(ctx context.Context, from, to map[int32]int64, q DLQQuery) (got map[int32][]DLQRecord, full, stalled map[int32]bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	offs := map[int32]kgo.Offset{}
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	opts := append(d.readerOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.dlq: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	if q.MaxBytes > 0 {
		// Each fetch brings about one page's worth (a larger record still
		// comes, alone), not the client's default 50 MiB.
		fb := int32(min(max(q.MaxBytes, 64<<10), 1<<30))
		opts = append(opts, kgo.FetchMaxBytes(fb), kgo.FetchMaxPartitionBytes(fb))
	}
	rc, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open dead-letter reader: %w", err)
	}
	defer rc.Close()
	got, full = map[int32][]DLQRecord{}, map[int32]bool{}
	bytesOf := map[int32]int{}
	reached := map[int32]int64{} // past the last record or marker read
	done := func(p int32) bool { return full[p] || reached[p] >= to[p] }
	for {
		all := true
		for p := range from {
			all = all && done(p)
		}
		if all {
			return got, full, nil, nil
		}
		pctx, cancel := context.WithTimeout(ctx, d.PollTimeout)
		fs := rc.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, fmt.Errorf("read dead-letter topic: %w", err)
		}
		n := 0
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, nil, nil, fmt.Errorf("read dead-letter topic %s: %w", d.dlq, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			p := r.Partition
			if r.Offset >= to[p] || done(p) {
				return
			}
			reached[p] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			rec := fromKgo(r, q.Preview)
			got[p] = append(got[p], rec)
			bytesOf[p] += rec.size
			if len(got[p]) >= q.Limit || (q.MaxBytes > 0 && bytesOf[p] >= q.MaxBytes) {
				full[p] = true
			}
		})
		if n == 0 {
			// Nothing within the poll timeout: a slow broker, or the
			// rest of a range compacted away. Never taken for the end.
			stalled = map[int32]bool{}
			for p := range from {
				if !done(p) {
					stalled[p] = true
				}
			}
			return got, full, stalled, nil
		}
	}
}

// fromKgo copies a fetched record, its value and header values cut to
// preview bytes (0: whole), so that the fetch buffers are not kept.
func fromKgo(r *kgo.Record, preview int) DLQRecord {
	size := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		size += len(h.Key) + len(h.Value)
	}
	cut := func(b []byte) []byte {
		if preview > 0 && len(b) > preview {
			return bytes.Clone(b[:preview])
		}
		return b
	}
	hs := kafkarec.Headers(r.Headers)
	if preview > 0 {
		for i := range hs {
			hs[i].Value = cut(hs[i].Value)
		}
	}
	return DLQRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: cut(r.Key),
		Value: cut(r.Value), ValueSize: len(r.Value), Headers: hs, size: size}
}

// Replay reads the record at partition/offset, drops its ec-dlq-* headers,
// applies fix, checks that the result is a valid envelope, and produces it
// to the control topic.
func (d *KafkaDLQ) Replay(ctx context.Context, partition int32, offset int64, fix ReplayFix) (DLQRecord, error) {
	src, err := d.Get(ctx, partition, offset)
	if err != nil {
		return DLQRecord{}, err
	}
	out, err := prepareForReplay(src, fix)
	if err != nil {
		return DLQRecord{}, err
	}
	rec := &kgo.Record{Topic: d.control, Key: out.Key, Value: out.Value, Headers: kafkarec.KgoHeaders(out.Headers)}
	if err := d.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return DLQRecord{}, fmt.Errorf("produce replay to %s: %w", d.control, err)
	}
	return out, nil
}

// Count returns how many records the dead-letter topic holds: the sum over
// its partitions of the end offset less the start offset (transaction
// markers, if any, count too: it is an upper bound).
func (d *KafkaDLQ) Count(ctx context.Context) (int64, error) {
	starts, err := d.adm.ListStartOffsets(ctx, d.dlq)
	if err != nil {
		return 0, fmt.Errorf("list start offsets of %s: %w", d.dlq, err)
	}
	if err := starts.Error(); err != nil {
		return 0, fmt.Errorf("list start offsets of %s: %w", d.dlq, err)
	}
	ends, err := d.adm.ListEndOffsets(ctx, d.dlq)
	if err != nil {
		return 0, fmt.Errorf("list end offsets of %s: %w", d.dlq, err)
	}
	if err := ends.Error(); err != nil {
		return 0, fmt.Errorf("list end offsets of %s: %w", d.dlq, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		start := int64(0)
		if s, ok := starts.Lookup(d.dlq, o.Partition); ok {
			start = s.Offset
		}
		n += max(o.Offset-start, 0)
	})
	return n, nil
}
