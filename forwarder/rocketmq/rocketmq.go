package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq/rmqrules"
)

// Defaults.
const (
	DefaultGroup       = "eventcenter"
	DefaultRetries     = 2
	DefaultSendTimeout = 10 * time.Second
	DefaultConcurrency = 16
	// DefaultMaxMessageBytes is a RocketMQ broker's default maxMessageSize
	// (4 MiB), which the Java client also checks before sending.
	DefaultMaxMessageBytes = rmqrules.DefaultMaxMessageBytes
)

// Config configures a RocketMQ target.
type Config struct {
	// Name is the target's name, for logs and errors. Required.
	Name string
	// NameServers are the name server addresses as "ip:port" (IP literals:
	// the client refuses host names). Required.
	NameServers []string
	// Group is the producer group; "" means DefaultGroup.
	Group string
	// Retries is how many more attempts the client makes inside one send
	// after a failed attempt (timeouts, connection errors and the codes
	// SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST);
	// 0 means DefaultRetries, negative means none. The forwarder retries
	// with backoff anyway; attempts that time out may still be stored, so
	// every retry can duplicate a message.
	Retries int
	// SendTimeout bounds one record's send, all attempts included; 0 means
	// DefaultSendTimeout. The client itself waits at most 3 s per attempt.
	SendTimeout time.Duration
	// Concurrency is how many records of one Send are in flight at once; 0
	// means DefaultConcurrency.
	Concurrency int
	// MaxMessageBytes is the largest message body the target sends: the
	// brokers' maxMessageSize. A larger body fails for good before it is
	// sent (the broker would refuse it as MESSAGE_ILLEGAL). 0 means
	// DefaultMaxMessageBytes. It must be at least the ingest payload limit,
	// so that every message ingest accepts can be sent.
	MaxMessageBytes int
	// AccessKey and SecretKey sign every request for the brokers' ACL
	// (HMAC-SHA1, the client's ACL hook); both or neither.
	AccessKey string
	SecretKey string
	// Logger, scoped by the caller; nil means slog.Default() with
	// component=target and target=Name. Unless SetClientLogger was called,
	// the first target's logger also receives the RocketMQ client's own
	// (process-global) logs, with component=rocketmq-client.
	Logger *slog.Logger
}

// CheckGroup accepts a producer group as the RocketMQ client does
// (rmqrules.CheckGroup).
func CheckGroup(g string) error { return rmqrules.CheckGroup(g) }

func (c *Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("Name: required"))
	}
	if len(c.NameServers) == 0 {
		errs = append(errs, errors.New("NameServers: at least one name server address (ip:port) is required"))
	}
	for i, a := range c.NameServers {
		if err := CheckNameServer(a); err != nil {
			errs = append(errs, fmt.Errorf("NameServers[%d]: %w", i, err))
		}
	}
	if c.Group != "" {
		if err := CheckGroup(c.Group); err != nil {
			errs = append(errs, fmt.Errorf("Group: %w", err))
		}
	}
	if c.SendTimeout < 0 {
		errs = append(errs, fmt.Errorf("SendTimeout: must not be negative, got %s", c.SendTimeout))
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("Concurrency: must not be negative, got %d", c.Concurrency))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxMessageBytes: must not be negative, got %d", c.MaxMessageBytes))
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		errs = append(errs, errors.New("AccessKey, SecretKey: both or neither"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rocketmq target %q config: %w", c.Name, err)
	}
	return nil
}

// CheckNameServer accepts "ip:port" with an IP literal
// (rmqrules.CheckNameServer).
func CheckNameServer(a string) error { return rmqrules.CheckNameServer(a) }

// Target sends to RocketMQ. Create it with New; it is safe for concurrent
// Send calls.
type Target struct {
	name        string
	nameServers []string
	timeout     time.Duration
	concurrency int
	maxBody     int
	log         *slog.Logger
	p           sender
	closeOnce   sync.Once
	closeErr    error
}

// sender is the part of the client's producer the target uses.
type sender interface {
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
	Shutdown() error
}

var _ forwarder.Target = (*Target)(nil)

var instanceSeq atomic.Int64

// New starts a producer for the target. It does not contact the name
// server; the first Send does.
func New(cfg Config) (*Target, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("component", "target", "target", cfg.Name)
	}
	installClientLogger(cfg.Logger)
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	retries := cfg.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	// A unique instance name per target: the client's process-global
	// client map is keyed by ip@instance.
	instance := fmt.Sprintf("eventcenter-%s-%d-%d", cfg.Name, os.Getpid(), instanceSeq.Add(1))
	popts := []producer.Option{
		producer.WithNameServer(cfg.NameServers),
		producer.WithGroupName(cfg.Group),
		producer.WithInstanceName(instance),
		producer.WithRetry(retries),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
	}
	if cfg.AccessKey != "" {
		popts = append(popts, producer.WithCredentials(primitive.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}))
	}
	p, err := producer.NewDefaultProducer(popts...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq target %q: new producer: %w", cfg.Name, err)
	}
	if err := p.Start(); err != nil {
		_ = p.Shutdown()
		return nil, fmt.Errorf("rocketmq target %q: start producer: %w", cfg.Name, err)
	}
	return &Target{
		name:        cfg.Name,
		nameServers: append([]string(nil), cfg.NameServers...),
		timeout:     cfg.SendTimeout,
		concurrency: cfg.Concurrency,
		maxBody:     cfg.MaxMessageBytes,
		log:         cfg.Logger,
		p:           p,
	}, nil
}

// Send sends every record and waits for all of them; each result carries
// the message id or the classified error. Records with the same forward key
// are sent one after the other, in order, and after a retryable failure the
// rest of that key's records fail without being sent (so a retry cannot put
// them out of order); records with different keys, or none, are sent in
// parallel, up to Concurrency at a time.
func (t *Target) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	sem := make(chan struct{}, t.concurrency)
	var wg sync.WaitGroup
	for _, chain := range chains(recs) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for _, i := range chain {
				res[i].Err = fmt.Errorf("send to rocketmq topic %q: %w", recs[i].Topic, ctx.Err())
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var failed error
			for _, i := range chain {
				if failed != nil {
					res[i].Err = fmt.Errorf("send to rocketmq topic %q: not sent, an earlier message with the same key failed: %v", recs[i].Topic, failed)
					continue
				}
				res[i] = t.send(ctx, &recs[i])
				if res[i].Err != nil && !forwarder.IsPermanent(res[i].Err) {
					failed = res[i].Err
				}
			}
		}()
	}
	wg.Wait()
	for i := range res {
		if res[i].Err != nil {
			res[i].Err = t.wrap(res[i].Err)
		}
	}
	return res
}

// wrap names the target and its name servers in a send error (a bare
// "context deadline exceeded" said neither where the send went nor that
// nothing answered).
func (t *Target) wrap(err error) error {
	what := ""
	if errors.Is(err, context.DeadlineExceeded) {
		what = ", no answer within the send timeout: are they up and reachable?"
	}
	return fmt.Errorf("rocketmq target %q (name servers %s%s): %w", t.name, strings.Join(t.nameServers, ","), what, err)
}

// chains groups record indexes by forward key, in order; records without a
// key are alone.
func chains(recs []forwarder.Record) [][]int {
	out := make([][]int, 0, len(recs))
	byKey := make(map[string]int)
	for i := range recs {
		k := recs[i].Key
		if k == "" {
			out = append(out, []int{i})
			continue
		}
		if c, ok := byKey[k]; ok {
			out[c] = append(out[c], i)
			continue
		}
		byKey[k] = len(out)
		out = append(out, []int{i})
	}
	return out
}

func (t *Target) send(ctx context.Context, rec *forwarder.Record) forwarder.Result {
	if len(rec.Value) > t.maxBody {
		return forwarder.Result{Err: forwarder.Permanent(fmt.Errorf("message body for rocketmq topic %q is %d bytes, more than the target's max message bytes (%d, the brokers' maxMessageSize)", rec.Topic, len(rec.Value), t.maxBody))}
	}
	msg, err := Message(rec)
	if err != nil {
		return forwarder.Result{Err: forwarder.Permanent(err)}
	}
	sctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	sr, err := t.p.SendSync(sctx, msg)
	routeKnown := false
	if err != nil && ctx.Err() == nil && noRoute(err) {
		// The client had no route: its query found no name server
		// answering in time, or none knew the topic. Nothing was sent, so
		// one more try cannot duplicate the message; it is worth one when
		// a name server knows the topic now (a slow first route query).
		if known, perr := probeRoute(sctx, t.nameServers, rec.Topic); perr == nil && known {
			routeKnown = true
			sr, err = t.p.SendSync(sctx, msg)
		}
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The caller gave up; the client reports that as a timeout.
			return forwarder.Result{Err: fmt.Errorf("send to rocketmq topic %q: %w (client: %v)", rec.Topic, cerr, err)}
		}
		if routeKnown && noRoute(err) {
			return forwarder.Result{Err: noRouteYet(rec.Topic, err)} // probed just now
		}
		return forwarder.Result{Err: t.classify(ctx, rec.Topic, err)}
	}
	if sr == nil {
		return forwarder.Result{Err: fmt.Errorf("send to rocketmq topic %q: no send result", rec.Topic)}
	}
	if sr.Status != primitive.SendOK {
		t.log.Debug("rocketmq broker answered without SEND_OK; the retry may duplicate the message",
			"status", statusName(sr.Status), "msg_id", sr.MsgID)
		return forwarder.Result{Err: &StatusError{Topic: rec.Topic, Status: sr.Status, MsgID: sr.MsgID}}
	}
	ref := sr.MsgID
	if ref == "" {
		ref = sr.OffsetMsgID
	}
	return forwarder.Result{Ref: ref}
}

// Close shuts the producer down. It is safe to call more than once.
func (t *Target) Close() error {
	t.closeOnce.Do(func() {
		if err := t.p.Shutdown(); err != nil {
			t.closeErr = fmt.Errorf("rocketmq target %q: shut down producer: %w", t.name, err)
		}
	})
	return t.closeErr
}

// StatusError is a reply the broker sent without an error code but with a
// status other than SEND_OK. It is retryable: the broker may or may not
// keep the message.
type StatusError struct {
	Topic  string
	Status primitive.SendStatus
	MsgID  string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("send to rocketmq topic %q: broker answered %s, not SEND_OK (message %s may be stored; retrying can duplicate it)",
		e.Topic, statusName(e.Status), e.MsgID)
}

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	default:
		return fmt.Sprintf("status %d", int(s))
	}
}

// reservedProperties are names the client or broker use themselves; a
// forwarded header with one of these names would change how RocketMQ treats
// the message (DELAY, TRAN_MSG...) or clobber its tag, keys or id.
var reservedProperties = map[string]bool{}

func init() {
	for _, p := range []string{
		primitive.PropertyKeys, primitive.PropertyTags, primitive.PropertyWaitStoreMsgOk,
		primitive.PropertyDelayTimeLevel, primitive.PropertyRetryTopic, primitive.PropertyRealTopic,
		primitive.PropertyRealQueueId, primitive.PropertyTransactionPrepared, primitive.PropertyProducerGroup,
		primitive.PropertyMinOffset, primitive.PropertyMaxOffset, primitive.PropertyBuyerId,
		primitive.PropertyOriginMessageId, primitive.PropertyTransferFlag, primitive.PropertyCorrectionFlag,
		primitive.PropertyMQ2Flag, primitive.PropertyReconsumeTime, primitive.PropertyMsgRegion,
		primitive.PropertyTraceSwitch, primitive.PropertyUniqueClientMessageIdKeyIndex,
		primitive.PropertyMaxReconsumeTimes, primitive.PropertyConsumeStartTime,
		primitive.PropertyTranscationPreparedQueueOffset, primitive.PropertyTranscationCheckTimes,
		primitive.PropertyCheckImmunityTimeInSeconds, primitive.PropertyShardingKey,
		primitive.PropertyTransactionID, primitive.PropertyCorrelationID, primitive.PropertyMessageReplyToClient,
		primitive.PropertyMessageTTL, primitive.PropertyReplyMessageArriveTime, primitive.PropertyMsgType,
		primitive.PropertyCluster, "__STARTDELIVERTIME", "INSTANCE_ID", "PUSH_REPLY_TIME", "__SHARDINGKEY",
		// RocketMQ 5.x system properties: timer (scheduled) messages, light
		// message queues, pop consumption, tracing and the broker's own
		// bookkeeping. TIMER_DELIVER_MS or TIMER_DELAY_SEC would make the
		// broker hold the message; INNER_MULTI_DISPATCH would dispatch it to
		// other queues.
		"TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS",
		"TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY",
		"INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "INNER_NUM", "INNER_BASE",
		"POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME", "TRACE_CONTEXT", "EXTEND_UNIQ_INFO", "DUP_INFO",
		"BORN_HOST", "BORN_TIMESTAMP", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "__CRC32#",
	} {
		reservedProperties[p] = true
	}
}

// transientPrefix starts the broker's transient properties (RocketMQ
// 5.x), none of which a message may set.
const transientPrefix = "__RMQ.TRANSIENT."

// reservedProperty tells whether a forwarded header's name is one
// RocketMQ uses itself.
func reservedProperty(name string) bool {
	return reservedProperties[name] || strings.HasPrefix(name, transientPrefix)
}

// maxPropertiesLen is what the broker accepts (a 2-byte length, Java
// checks < Short.MAX_VALUE).
const maxPropertiesLen = 32767

// Message builds the RocketMQ message for rec. Its errors are about the
// record itself (invalid topic, headers that cannot be properties) and no
// retry can fix them.
func Message(rec *forwarder.Record) (*primitive.Message, error) {
	if err := CheckTopic(rec.Topic); err != nil {
		return nil, err
	}
	m := primitive.NewMessage(rec.Topic, rec.Value)
	if rec.Tag != "" {
		if strings.ContainsAny(rec.Tag, "\x01\x02") {
			return nil, fmt.Errorf("rocketmq tag %q contains a control character (0x01/0x02)", rec.Tag)
		}
		m.WithTag(rec.Tag)
	}
	var keys []string
	for _, k := range []string{rec.Key, rec.ID} {
		if k == "" {
			continue
		}
		if strings.ContainsAny(k, "\x01\x02") {
			return nil, fmt.Errorf("rocketmq key %q contains a control character (0x01/0x02)", k)
		}
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		m.WithKeys(keys)
	}
	if rec.Key != "" {
		// The queue selector hashes it: one forward key, one queue.
		m.WithShardingKey(rec.Key)
	}
	size := 0
	for _, h := range rec.Headers {
		if h.Key == envelope.HeaderID {
			continue // set from rec.ID below (forwarder.BuildRecord adds it as a header too)
		}
		switch {
		case h.Key == "":
			return nil, errors.New("header with an empty name cannot be a rocketmq property")
		case reservedProperty(h.Key):
			return nil, fmt.Errorf("header %q is a reserved rocketmq property name", h.Key)
		case strings.ContainsAny(h.Key, "\x01\x02") || strings.ContainsAny(string(h.Value), "\x01\x02"):
			return nil, fmt.Errorf("header %q contains a control character (0x01/0x02) that rocketmq properties cannot carry", h.Key)
		}
		m.WithProperty(h.Key, string(h.Value))
		size += len(h.Key) + len(h.Value) + 2
	}
	if rec.ID != "" {
		m.WithProperty(envelope.HeaderID, rec.ID)
		size += len(envelope.HeaderID) + len(rec.ID) + 2
	}
	size += len(primitive.PropertyTags) + len(rec.Tag) + 2
	size += len(primitive.PropertyKeys) + len(strings.Join(keys, " ")) + 2
	size += len(primitive.PropertyUniqueClientMessageIdKeyIndex) + 32 + 2
	size += len(primitive.PropertyShardingKey) + len(rec.Key) + 2
	if size >= maxPropertiesLen {
		return nil, fmt.Errorf("tag, keys and headers take %d bytes as rocketmq properties; the broker accepts less than %d", size, maxPropertiesLen)
	}
	return m, nil
}
