package ingest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
)

// headerMap is a record's headers by name (the last one wins).
func headerMap(r *kgo.Record) map[string]string {
	hs := map[string]string{}
	for _, h := range r.Headers {
		hs[h.Key] = string(h.Value)
	}
	return hs
}

// noTopic is a PREPARE of n random (incompressible) bytes without
// ec-topic: malformed.
func noTopic(key string, n int) *kgo.Record {
	v := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(v)
	r := prepareRec("shop", key, v)
	r.Headers = r.Headers[:3]
	return r
}

// bigProducer is a client that can produce records of about 2 MB.
func (e *env) bigProducer() *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(2_000_000))
	require.NoError(e.t, err)
	e.t.Cleanup(cl.Close)
	return cl
}

// The scenario: a malformed record just under the default payload
// limit (1,040,000 bytes, accepted by a broker with default settings) is
// larger than franz-go's default producer batch (1,000,012 bytes). Its
// dead letter is written in full, and the records after it are applied.
func TestDeadLetterOfMaxPayloadWrittenInFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	cfg := e.config()
	in := e.start(cfg, st, nil, NewOwnership())

	big := noTopic("big", 1_040_000)
	big.Topic = e.topic
	require.NoError(t, e.bigProducer().ProduceSync(t.Context(), big).FirstErr())
	e.produce(prepareRec("shop", "after", []byte("ok")), decisionRec("shop", "after", "commit"))

	require.Eventually(t, func() bool { _, ok := st.get("shop", "after"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	dead := e.readDLQ(1)
	require.True(t, bytes.Equal(big.Value, dead[0].Value), "written with its value")
	hs := headerMap(dead[0])
	require.Contains(t, hs[envelope.HeaderDLQReason], "ec-topic")
	require.NotContains(t, hs, envelope.HeaderDLQValueDropped)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("ec-topic")), 0)
	require.InDelta(t, 0, testutil.ToFloat64(in.met.dlqStripped.WithLabelValues(causeTooLarge)), 0)
}

// A dead letter the dead-letter topic refuses as too large (its
// max.message.bytes is small) is written without its value, with why and
// the original size, and the partition moves on.
func TestDeadLetterTooLargeForTheTopicWrittenWithoutValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	resps, err := e.adm.AlterTopicConfigs(t.Context(), []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptr("10000")}}, e.dlq)
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)
	st := newMemStore()
	in := e.start(e.config(), st, nil, NewOwnership())

	small := noTopic("small", 10)
	big := noTopic("big", 20_000)
	big.Headers = append(big.Headers, kgo.RecordHeader{Key: "ec-h-trace", Value: []byte("t-1")})
	e.produce(small, big, prepareRec("shop", "after", []byte("ok")), decisionRec("shop", "after", "commit"))

	require.Eventually(t, func() bool { _, ok := st.get("shop", "after"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	dead := e.readDLQ(2)
	require.True(t, bytes.Equal(small.Value, dead[0].Value), "the small one in full")
	require.NotContains(t, headerMap(dead[0]), envelope.HeaderDLQValueDropped)

	d := dead[1]
	require.Empty(t, len(d.Value))
	require.Equal(t, big.Key, d.Key)
	hs := headerMap(d)
	require.Contains(t, hs[envelope.HeaderDLQValueDropped], "MESSAGE_TOO_LARGE")
	require.Equal(t, strconv.Itoa(recordSize(big)), hs[envelope.HeaderDLQSize])
	require.Contains(t, hs[envelope.HeaderDLQReason], "ec-topic")
	require.Equal(t, e.topic, hs[envelope.HeaderDLQTopic])
	require.Equal(t, "0", hs[envelope.HeaderDLQPartition])
	require.Equal(t, "1", hs[envelope.HeaderDLQOffset])
	require.Equal(t, "t-1", hs["ec-h-trace"], "original headers kept")
	require.Equal(t, "prepare", hs[envelope.HeaderType])
	require.NotContains(t, hs, envelope.HeaderDLQOmitted)

	require.InDelta(t, 2, testutil.ToFloat64(in.met.dlq.WithLabelValues("ec-topic")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlqStripped.WithLabelValues(causeTooLarge)), 0)
	require.InDelta(t, 0, testutil.ToFloat64(in.met.dlqDropped.WithLabelValues(causeTooLarge)), 0)
	require.InDelta(t, 2, testutil.ToFloat64(in.met.envelopes.WithLabelValues("prepare", resultInvalid)), 0)
}

// refuseDLQ makes the broker answer every produce to the dead-letter topic
// with code, and counts them; each refusal then calls each, when set.
func (e *env) refuseDLQ(code int16, each func()) *int {
	id := e.topicID(e.dlq)
	n := new(int)
	e.cluster.ControlKey(kmsgProduceKey.Int16(), func(kreq kmsgRequest) (kmsgResponse, error, bool) {
		e.cluster.KeepControl()
		resp, ok := failProduceTo(kreq, e.dlq, id, code)
		if ok {
			*n++ // control functions run one at a time
			if each != nil {
				each()
			}
		}
		return resp, nil, ok
	})
	return n
}

// When the dead-letter topic refuses everything (no authorization), the
// record is dropped, counted and logged, and the partition moves on.
func TestDeadLetterDroppedWhenTheTopicRefusesEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	e.refuseDLQ(kerr.TopicAuthorizationFailed.Code, nil)
	st := newMemStore()
	in := e.start(e.config(), st, nil, NewOwnership())

	e.produce(noTopic("bad", 100), prepareRec("shop", "after", []byte("ok")), decisionRec("shop", "after", "commit"))

	require.Eventually(t, func() bool { _, ok := st.get("shop", "after"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlqDropped.WithLabelValues(causeNotAuthorized)), 0)
	require.InDelta(t, 0, testutil.ToFloat64(in.met.dlq.WithLabelValues("ec-topic")), 0, "nothing was set aside")
	require.InDelta(t, 1, testutil.ToFloat64(in.met.envelopes.WithLabelValues("prepare", resultInvalid)), 0)
	m, _ := st.get("shop", "after")
	require.Equal(t, state.Committed, m.Status)
}

// Errors that a retry may fix are retried, but only for DLQRetryBudget;
// then the copy without value is tried for as long, and the record is
// dropped: the partition waits a bounded time.
func TestDeadLetterTransientFailuresBoundedByBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	// The budget is measured by cfg.Now, which moves only when the broker
	// refuses: 25s a refusal against a budget of 60s allows three attempts
	// (at 25s and 50s the next one starts within the budget, at 75s it
	// would not), for the full copy and again for the one without value,
	// however slowly the machine runs them.
	clock := testclock.New()
	refused := e.refuseDLQ(kerr.UnknownServerError.Code, func() { clock.Advance(25 * time.Second) })
	st := newMemStore()
	cfg := e.config()
	cfg.Now = clock.Now
	cfg.DLQRetryBudget = time.Minute
	in := e.start(cfg, st, nil, NewOwnership())

	e.produce(noTopic("bad", 100), prepareRec("shop", "after", []byte("ok")))

	require.Eventually(t, func() bool { _, ok := st.get("shop", "after"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlqDropped.WithLabelValues(causeRetries)), 0)
	require.InDelta(t, 6, testutil.ToFloat64(in.met.dlqErrs), 0, "three attempts full, three stripped")
	require.Equal(t, 6, *refused)
}

// A PREPARE whose payload fits but whose forwarded record (payload and
// headers) would exceed MaxPayload + RecordOverhead is refused at ingest:
// no target could send it.
func TestPrepareTooLargeToForwardGoesToDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	cfg := e.config()
	cfg.MaxPayload = 16
	in := e.start(cfg, st, nil, NewOwnership())

	var hs []kgo.RecordHeader
	for i := range 5 {
		hs = append(hs, kgo.RecordHeader{Key: "ec-h-h" + strconv.Itoa(i), Value: bytes.Repeat([]byte("h"), envelope.MaxHeaderValueLen)})
	}
	fat := prepareRec("shop", "fat", []byte("small"), hs...)
	fits := prepareRec("shop", "fits", []byte("small"), hs[:3]...)
	e.produce(fat, fits)

	require.Eventually(t, func() bool { _, ok := st.get("shop", "fits"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	_, ok := st.get("shop", "fat")
	require.False(t, ok)
	dead := e.readDLQ(1)
	require.Equal(t, fat.Key, dead[0].Key)
	require.Contains(t, headerMap(dead[0])[envelope.HeaderDLQReason], "exceeds the limit of 65552")
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("too_large")), 0)
}

func TestStrippedCopyBoundsKeyAndHeaders(t *testing.T) {
	t.Parallel()
	in, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, newMemStore(), NewOwnership())
	require.NoError(t, err)
	src := &kgo.Record{Topic: "c", Partition: 2, Offset: 7, Key: bytes.Repeat([]byte("k"), strippedKeyMax+1), Value: []byte("v")}
	for i := range 3 {
		src.Headers = append(src.Headers, kgo.RecordHeader{Key: "h" + strconv.Itoa(i), Value: bytes.Repeat([]byte("x"), 16<<10)})
	}
	d := &deadLetter{src: src, err: errors.New(strings.Repeat("r", 2000)), fullErr: kerr.MessageTooLarge}
	c := in.strippedCopy(d)
	require.Nil(t, c.Key)
	require.Nil(t, c.Value)
	require.Equal(t, DefaultControlTopic+DLQSuffix, c.Topic)
	hs := headerMap(c)
	require.Contains(t, hs, "h0")
	require.NotContains(t, hs, "h1", "over 32 KiB of headers")
	require.Equal(t, "key,headers:2", hs[envelope.HeaderDLQOmitted])
	require.Equal(t, strconv.Itoa(recordSize(src)), hs[envelope.HeaderDLQSize])
	require.LessOrEqual(t, len(hs[envelope.HeaderDLQReason]), maxReasonLen)
	require.True(t, strings.HasSuffix(hs[envelope.HeaderDLQReason], "…"))
	require.Equal(t, "7", hs[envelope.HeaderDLQOffset])
	require.Less(t, recordSize(c), 40<<10)
}

func TestDLQCause(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		kerr.MessageTooLarge:              causeTooLarge,
		kerr.RecordListTooLarge:           causeTooLarge,
		kerr.TopicAuthorizationFailed:     causeNotAuthorized,
		kerr.ClusterAuthorizationFailed:   causeNotAuthorized,
		kerr.UnknownTopicOrPartition:      causeUnknownTopic,
		kerr.InvalidRecord:                causeRejected,
		kerr.PolicyViolation:              causeRejected,
		kerr.UnknownServerError:           causeRetries,
		context.DeadlineExceeded:          causeRetries,
		kgo.ErrRecordTimeout:              causeRetries,
		errors.New("connection refused"):  causeRetries,
		errors.Join(kerr.MessageTooLarge): causeTooLarge,
		errBudget:                         causeRetries,
	} {
		require.Equal(t, want, dlqCause(err), "%v", err)
	}
}

func TestCheckDLQTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	cfg := e.config()
	in, err := New(cfg, newMemStore(), NewOwnership())
	require.NoError(t, err)
	require.NoError(t, in.CheckDLQTopic(t.Context()), "not started: a client of its own")

	cfg.DLQTopic = "no.such.dlq"
	cfg.Registerer = nil
	in = e.start(cfg, newMemStore(), nil, NewOwnership())
	err = in.CheckDLQTopic(t.Context())
	require.ErrorIs(t, err, ErrDLQTopicMissing)
	require.ErrorContains(t, err, `"no.such.dlq"`)
	require.ErrorContains(t, err, "eventcenter_dlq_dropped_total")
}

// Every cause has a series for every lane before anything happens, so
// alerts on increase see the first one.
func TestDLQFailureSeriesExistFromTheStart(t *testing.T) {
	t.Parallel()
	m, err := newMetrics(nil)
	require.NoError(t, err)
	m.forLane("")
	require.Equal(t, len(dlqCauses), testutil.CollectAndCount(m.dlqDropped))
	require.Equal(t, len(dlqCauses), testutil.CollectAndCount(m.dlqStripped))
	m.forLane("gold")
	require.Equal(t, 2*len(dlqCauses), testutil.CollectAndCount(m.dlqDropped))
	require.Equal(t, 2*len(dlqCauses), testutil.CollectAndCount(m.dlqStripped))
}

func ptr[T any](v T) *T { return &v }
