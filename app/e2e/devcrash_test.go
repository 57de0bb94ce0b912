package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/envelope"
)

// TestDevKeepsAutoCreatedTopicsAcrossKill9 runs `eventcenter dev`, forwards
// messages to a business topic the embedded broker creates on first use,
// SIGKILLs the process, starts it again on the same data directory and
// forwards more. The business topic must hold every message exactly once
// at increasing offsets, readable from the beginning: an auto-created topic
// that was only saved on a clean shutdown restarted at offset 0 over its
// old segment files.
func TestDevKeepsAutoCreatedTopicsAcrossKill9(t *testing.T) {
	t.Parallel()
	const (
		devControl = "eventcenter.control"
		topic      = "orders.events" // the topic of dev's printed kcat commands
		perRun     = 20
	)
	dataDir := t.TempDir()
	broker := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startDev := func() (*process, string) {
		httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startBinary(t, "dev", "--kafka-addr", broker, "--data-dir", dataDir, "--http-listen", httpAddr, "--ingress-listen", "127.0.0.1:0")
		require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "eventcenter dev is running") },
			time.Minute, 20*time.Millisecond, "dev did not start:\n%s", p.output.String())
		return p, httpAddr
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(devControl),
		kgo.RecordRetries(20), kgo.RetryTimeout(time.Minute))
	require.NoError(t, err)
	defer cl.Close()
	send := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("m-%03d", i)
			for _, env := range []envelope.Envelope{
				{Type: envelope.Prepare, BizID: "orders", MessageKey: key, Payload: []byte("payload-" + key), ForwardTopic: topic},
				{Type: envelope.Commit, BizID: "orders", MessageKey: key},
			} {
				rec, err := envelope.Encode(env)
				require.NoError(t, err)
				kr := &kgo.Record{Topic: devControl, Key: rec.Key, Value: rec.Value}
				for _, h := range rec.Headers {
					kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				require.NoError(t, cl.ProduceSync(t.Context(), kr).FirstErr())
			}
		}
	}
	// sent waits until the store says n messages were sent: the forwarder
	// got the broker's acknowledgement for each.
	sent := func(p *process, httpAddr string, n int) {
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
			return last.ByStatus["COMMITTED/SENT"] == int64(n)
		}, 2*time.Minute, 50*time.Millisecond, "want %d sent, counts %+v; center said:\n%s", n, last.ByStatus, p.output.String())
	}

	first, httpAddr := startDev()
	send(0, perRun)
	sent(first, httpAddr, perRun)
	// The group's offsets cover every envelope before the kill, so the
	// restarted center must not read any of them again.
	adm := kadm.NewClient(cl)
	require.Eventually(t, func() bool {
		offs, err := adm.FetchOffsets(t.Context(), "eventcenter")
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == 2*perRun
	}, time.Minute, 50*time.Millisecond, "the control topic's offsets were not committed")
	first.kill(t)

	second, httpAddr := startDev()
	send(perRun, 2*perRun)
	sent(second, httpAddr, 2*perRun)

	// Read the business topic from the beginning up to its end.
	reader, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer reader.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	seen := map[string]int64{}
	next := int64(0)
	for len(seen) < 2*perRun && ctx.Err() == nil {
		fs := reader.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("reading %s[%d]: %v", tp, p, err)
			}
		})
		if t.Failed() {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			id := ""
			for _, h := range r.Headers {
				if h.Key == "ec-id" {
					id = string(h.Value)
				}
			}
			if prev, dup := seen[id]; dup {
				t.Errorf("%s at offsets %d and %d", id, prev, r.Offset)
			}
			seen[id] = r.Offset
			require.Equal(t, next, r.Offset, "offsets of %s[%d] go up one by one (record %s)", r.Topic, r.Partition, id)
			next++
		})
	}
	require.Len(t, seen, 2*perRun, "every forwarded message is in the topic; center said:\n%s", second.output.String())
	for i := range 2 * perRun {
		require.Contains(t, seen, fmt.Sprintf("orders:m-%03d", i))
	}
	require.Equal(t, float64(2*perRun), envelopesRead(t, httpAddr),
		"the restarted center read only the new envelopes: the group's committed offsets survived the kill")
	readWithPrintedKcat(t, second.output.String(), 2*perRun)
	second.interrupt(t)
}

// readWithPrintedKcat runs the kcat consume command dev printed: it must
// exit by itself at the end of the topic (-e) having read want forwarded
// messages, and kcat must decode every one of them.
func readWithPrintedKcat(t *testing.T, devOutput string, want int) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed (.ci/run installs Debian's kcat)")
		}
		t.Log("kcat not installed (apt-get install kcat); the printed consume command is not run")
		return
	}
	line := strings.TrimSpace(firstLine(devOutput, "kcat -C"))
	head, format, ok := strings.Cut(line, " -f '")
	require.True(t, ok, "no -f '...' in the printed consume command %q", line)
	args := append(strings.Fields(head)[1:], "-q", "-f", strings.TrimSuffix(format, "'"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, args...).CombinedOutput()
	require.NoError(t, ctx.Err(), "the printed kcat command did not exit at the end of the topic: %s", line)
	require.NoError(t, err, "kcat %v:\n%s", args, out)
	require.Equal(t, want, strings.Count(string(out), "ec-id=orders:m-"), "kcat read:\n%s", out)
	require.NotContains(t, string(out), "MagicByte")
}

// envelopesRead sums eventcenter_envelopes_total from a center's /metrics.
func envelopesRead(t *testing.T, httpAddr string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	total := 0.0
	for _, m := range mfs["eventcenter_envelopes_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return total
}
