package center

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/app/config"
)

// logBuffer collects a center's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTopicsCenter starts a center with quick group changes and topic
// checks; it is stopped at cleanup.
func startTopicsCenter(t *testing.T, cfg config.Config, log io.Writer) *Center {
	t.Helper()
	return startCenter(t, cfg, Options{
		Logger:             slog.New(slog.NewTextHandler(log, nil)),
		TopicCheckInterval: 20 * time.Millisecond,
	})
}

// readyz returns /readyz's status and body.
func readyz(c *Center) (int, string, error) {
	resp, err := http.Get("http://" + c.Addr() + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// eventuallyReadyz waits until /readyz answers code with a body holding
// want, and returns the body.
func eventuallyReadyz(t *testing.T, c *Center, log *logBuffer, code int, want string) string {
	t.Helper()
	var body string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, b, err := readyz(c)
		body = b
		require.NoError(ct, err)
		require.Equal(ct, code, got, b)
		require.Contains(ct, b, want)
	}, 30*time.Second, 10*time.Millisecond, "log:\n%s", log)
	return body
}

func adminClient(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func topicsConfig(t *testing.T, brokers []string) config.Config {
	cfg := testConfig(t, brokers)
	cfg.Kafka.SessionTimeout = 6 * time.Second
	return cfg
}

// TestMissingControlTopicIsNotReady: without the control topic and without
// kafka.create_topics the center logs an error naming the topic and the
// brokers, answers /readyz 503 with the reason, creates nothing, and keeps
// looking: once a separate job creates the topic, it becomes ready.
func TestMissingControlTopicIsNotReady(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the centers stop (cleanups run last first)
	brokers := cluster.ListenAddrs()
	var log logBuffer
	c := startTopicsCenter(t, topicsConfig(t, brokers), &log)

	body := eventuallyReadyz(t, c, &log, http.StatusServiceUnavailable, "control topic eventcenter.control does not exist")
	require.Contains(t, body, "kafka.create_topics", "the reason says how to fix it")
	require.Eventually(t, func() bool {
		return strings.Contains(log.String(), "level=ERROR") && strings.Contains(log.String(), "control topic eventcenter.control does not exist")
	}, 30*time.Second, 10*time.Millisecond, "no error logged:\n%s", &log)
	line := ""
	for l := range strings.Lines(log.String()) {
		if strings.Contains(l, "level=ERROR") {
			line = l
			break
		}
	}
	require.Contains(t, line, brokers[0], "the error names the brokers")
	require.Equal(t, 1, strings.Count(log.String(), "level=ERROR"), "the error is repeated once a minute, not at every check:\n%s", &log)

	adm := adminClient(t, brokers)
	topics, err := adm.ListTopics(t.Context(), "eventcenter.control")
	require.NoError(t, err)
	require.False(t, topics.Has("eventcenter.control"), "kafka.create_topics is off: nothing is created")
	code, body, err := readyz(c)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code, body)

	// A separate job creates the topic: the center notices and joins.
	_, err = adm.CreateTopic(t.Context(), 2, 1, nil, "eventcenter.control")
	require.NoError(t, err)
	eventuallyReadyz(t, c, &log, http.StatusOK, "owns 2 partitions")
	// The watch clears its problem, then logs: /readyz may answer first.
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "control topic found") }, 10*time.Second, 10*time.Millisecond,
		"no \"control topic found\" logged:\n%s", &log)
}

// TestCreateTopicsCreatesTheControlTopic: with kafka.create_topics the
// center creates a missing control topic with kafka.control_partitions
// partitions and becomes ready once the group assigns them.
func TestCreateTopicsCreatesTheControlTopic(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the centers stop (cleanups run last first)
	cfg := topicsConfig(t, cluster.ListenAddrs())
	cfg.Kafka.CreateTopics = true
	cfg.Kafka.ControlPartitions = 3
	var log logBuffer
	c := startTopicsCenter(t, cfg, &log)

	eventuallyReadyz(t, c, &log, http.StatusOK, "owns 3 partitions")
	topics, err := adminClient(t, cluster.ListenAddrs()).ListTopics(t.Context(), "eventcenter.control")
	require.NoError(t, err)
	require.True(t, topics.Has("eventcenter.control"))
	require.Len(t, topics["eventcenter.control"].Partitions, 3)
	require.Contains(t, log.String(), "created the control topic")
	require.NotContains(t, log.String(), "level=ERROR")
}

// TestCreateTopicsCreatesTheDeadLetterTopics: with kafka.create_topics
// the center creates the missing dead-letter topics too, the default
// lane's and every extra lane's, with kafka.control_partitions partitions,
// instead of logging them missing (malformed records would be dropped).
func TestCreateTopicsCreatesTheDeadLetterTopics(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the centers stop (cleanups run last first)
	cfg := topicsConfig(t, cluster.ListenAddrs())
	cfg.Kafka.CreateTopics = true
	cfg.Kafka.ControlPartitions = 3
	cfg.Kafka.Lanes = []config.Lane{{Name: "quiet", ID: 1}}
	var log logBuffer
	c := startTopicsCenter(t, cfg, &log)

	eventuallyReadyz(t, c, &log, http.StatusOK, "every one consuming")
	dlqs := []string{"eventcenter.control.dlq", "eventcenter.control.lane.quiet.dlq"}
	require.Eventually(t, func() bool {
		return strings.Count(log.String(), "created the dead-letter topic") == len(dlqs)
	}, 30*time.Second, 10*time.Millisecond, "log:\n%s", &log)
	topics, err := adminClient(t, cluster.ListenAddrs()).ListTopics(t.Context(), dlqs...)
	require.NoError(t, err)
	for _, dlq := range dlqs {
		require.True(t, topics.Has(dlq), dlq)
		require.Len(t, topics[dlq].Partitions, 3, dlq)
	}
	require.NotContains(t, log.String(), "level=ERROR")
}

// TestCreateTopicsFailureIsNotReady: when the brokers refuse to create the
// topic the center says so and stays not ready.
func TestCreateTopicsFailureIsNotReady(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the centers stop (cleanups run last first)
	cluster.ControlKey(kmsg.CreateTopics.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		creq := req.(*kmsg.CreateTopicsRequest)
		resp := creq.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range creq.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	cfg := topicsConfig(t, cluster.ListenAddrs())
	cfg.Kafka.CreateTopics = true
	var log logBuffer
	c := startTopicsCenter(t, cfg, &log)

	body := eventuallyReadyz(t, c, &log, http.StatusServiceUnavailable, "creating it failed")
	require.Contains(t, body, "TOPIC_AUTHORIZATION_FAILED")
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "level=ERROR") }, 30*time.Second, 10*time.Millisecond)
}

// TestReadyAfterTheGroupAssigns: with the topic in place an instance is
// not ready until the group has assigned it its partitions, and an
// instance beyond the partition count is ready while owning none.
func TestReadyAfterTheGroupAssigns(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close) // after the centers stop (cleanups run last first)
	// Hold every JoinGroup until released: the consumer cannot get an
	// assignment meanwhile.
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	cluster.ControlKey(kmsg.JoinGroup.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	cfg := topicsConfig(t, cluster.ListenAddrs())
	var log logBuffer
	first := startTopicsCenter(t, cfg, &log)
	eventuallyReadyz(t, first, &log, http.StatusServiceUnavailable, "waiting for consumer group eventcenter to assign partitions of control topic eventcenter.control")

	unblock()
	eventuallyReadyz(t, first, &log, http.StatusOK, "owns 1 partitions")

	// A second instance of the group: one partition, so it owns none
	// and is ready all the same.
	var log2 logBuffer
	second := startTopicsCenter(t, cfg, &log2)
	eventuallyReadyz(t, second, &log2, http.StatusOK, "ok: owns")
	require.Eventually(t, func() bool {
		return len(first.Owned.Partitions())+len(second.Owned.Partitions()) == 1
	}, 30*time.Second, 10*time.Millisecond)
	var bodies string
	for _, c := range []*Center{first, second} {
		code, body, err := readyz(c)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		bodies += body
	}
	require.Contains(t, bodies, "owns 0 partitions", "the spare instance is ready")
}

// fakeAdmin answers the control-topic check from fields.
type fakeAdmin struct {
	exists    bool
	listErr   error
	createErr error
	creates   int
}

func (f *fakeAdmin) ListTopics(_ context.Context, topics ...string) (kadm.TopicDetails, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	d := kadm.TopicDetails{}
	for _, t := range topics {
		if f.exists {
			d[t] = kadm.TopicDetail{Topic: t}
		} else {
			d[t] = kadm.TopicDetail{Topic: t, Err: kerr.UnknownTopicOrPartition}
		}
	}
	return d, nil
}

func (f *fakeAdmin) CreateTopic(_ context.Context, partitions int32, _ int16, _ map[string]*string, topic string) (kadm.CreateTopicResponse, error) {
	f.creates++
	if f.createErr != nil {
		return kadm.CreateTopicResponse{}, f.createErr
	}
	f.exists = true
	return kadm.CreateTopicResponse{Topic: topic, NumPartitions: partitions}, nil
}

// TestTopicWatchSaysWhy walks the check through unreachable brokers, a
// missing topic (the error repeated once a minute, not at every check), a
// failed and a successful creation.
func TestTopicWatchSaysWhy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var log logBuffer
	cfg := config.Default().Kafka
	cfg.Brokers = []string{"10.0.0.1:9092"}
	fa := &fakeAdmin{listErr: errors.New("dial tcp 10.0.0.1:9092: connection refused")}
	w := newTopicWatch(cfg, fa, time.Second, func() time.Time { return now }, slog.New(slog.NewTextHandler(&log, nil)))
	require.Equal(t, "checking that control topic eventcenter.control exists", w.Problem(), "not ready before the first check")

	require.False(t, w.check(t.Context()))
	require.Equal(t, "cannot check control topic eventcenter.control on brokers [10.0.0.1:9092]: dial tcp 10.0.0.1:9092: connection refused", w.Problem())
	require.Equal(t, 1, strings.Count(log.String(), "level=WARN"))
	fa.listErr = errors.New("i/o timeout")
	require.False(t, w.check(t.Context()))
	require.Contains(t, w.Problem(), "i/o timeout", "the reason is the latest")
	require.Equal(t, 1, strings.Count(log.String(), "level=WARN"), "the same kind of problem is not logged at every check")

	fa.listErr = nil
	require.False(t, w.check(t.Context()))
	require.Contains(t, w.Problem(), "control topic eventcenter.control does not exist on brokers [10.0.0.1:9092]")
	require.Equal(t, 1, strings.Count(log.String(), "level=ERROR"), "a new problem is logged at once")
	now = now.Add(30 * time.Second)
	require.False(t, w.check(t.Context()))
	require.Equal(t, 1, strings.Count(log.String(), "level=ERROR"), "not again within a minute")
	now = now.Add(31 * time.Second)
	require.False(t, w.check(t.Context()))
	require.Equal(t, 2, strings.Count(log.String(), "level=ERROR"), "again after a minute")
	require.Zero(t, fa.creates, "kafka.create_topics is off")

	w.cfg.CreateTopics = true
	fa.createErr = kerr.PolicyViolation
	require.False(t, w.check(t.Context()))
	require.Contains(t, w.Problem(), "creating it failed: POLICY_VIOLATION")
	require.Equal(t, 3, strings.Count(log.String(), "level=ERROR"))

	fa.createErr = nil
	require.True(t, w.check(t.Context()))
	require.Empty(t, w.Problem())
	require.Equal(t, 2, fa.creates)
	require.Contains(t, log.String(), "created the control topic")
	require.Contains(t, log.String(), "control topic found")

	// Another instance created it first: fine.
	fa.exists, fa.createErr = false, kerr.TopicAlreadyExists
	require.True(t, w.check(t.Context()))
	require.Empty(t, w.Problem())
}
