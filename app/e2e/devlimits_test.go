package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/envelope"
)

// TestDevTakesRecordsAtThePayloadLimit runs records at the payload limit against
// `eventcenter dev` as a process: a 1,040,000-byte PREPARE without
// ec-topic (dead-lettered) must not stall the partition, and a valid
// message of 1,048,000 bytes (just under max_payload_bytes) with 10 kB of
// forwarded headers must be forwarded, not accepted and then refused by the
// embedded broker, whose default message.max.bytes (1,048,588) is below
// what ingest accepts.
func TestDevTakesRecordsAtThePayloadLimit(t *testing.T) {
	t.Parallel()
	const devControl, topic = "eventcenter.control", "big.events"
	broker := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startBinary(t, "dev", "--kafka-addr", broker, "--data-dir", t.TempDir(), "--http-listen", httpAddr, "--ingress-listen", "127.0.0.1:0", "--partitions", "1")
	require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "eventcenter dev is running") },
		time.Minute, 20*time.Millisecond, "dev did not start:\n%s", p.output.String())

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(devControl),
		kgo.ProducerBatchMaxBytes(2_000_000), kgo.RecordRetries(20))
	require.NoError(t, err)
	defer cl.Close()
	produce := func(e envelope.Envelope) {
		rec, err := envelope.Encode(e)
		require.NoError(t, err)
		kr := &kgo.Record{Topic: devControl, Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		require.NoError(t, cl.ProduceSync(t.Context(), kr).FirstErr())
	}
	// Malformed and large: no forward topic. Encode refuses it, so strip
	// the header from a valid one.
	bad, err := envelope.Encode(envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "bad",
		Payload: bytes.Repeat([]byte("x"), 1_040_000), ForwardTopic: topic})
	require.NoError(t, err)
	kr := &kgo.Record{Topic: devControl, Key: bad.Key, Value: bad.Value}
	for _, h := range bad.Headers {
		if h.Key != envelope.HeaderTopic {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	require.NoError(t, cl.ProduceSync(t.Context(), kr).FirstErr())

	// Random bytes: the producers compress, and a repeated byte would pass
	// any size limit compressed.
	big := make([]byte, 1_048_000)
	_, _ = rand.Read(big)
	note := []envelope.Header{{Key: "note", Value: []byte(hex.EncodeToString(big[:5_000]))}}
	for _, key := range []string{"big", "small"} {
		payload, headers := big, note
		if key == "small" {
			payload, headers = []byte("small"), nil
		}
		produce(envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: key, Payload: payload, ForwardTopic: topic, Headers: headers})
		produce(envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: key})
	}

	var last adminapi.Counts
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/api/v1/counts")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		last = adminapi.Counts{}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&last) != nil {
			return false
		}
		return last.ByStatus["COMMITTED/SENT"] == 2
	}, 2*time.Minute, 50*time.Millisecond, "both valid messages sent; counts %+v; center said:\n%s", &last, p.output.String())
	require.Zero(t, last.ByStatus["COMMITTED/DEAD"], "nothing accepted goes DEAD")

	reader, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(4<<20), kgo.FetchMaxPartitionBytes(4<<20))
	require.NoError(t, err)
	defer reader.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sizes := map[string]int{}
	for len(sizes) < 2 && ctx.Err() == nil {
		fs := reader.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) { t.Logf("reading %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "ec-id" {
					sizes[string(h.Value)] = len(r.Value)
				}
			}
		})
	}
	require.Equal(t, map[string]int{"orders:big": len(big), "orders:small": 5}, sizes)
	p.interrupt(t)
}
