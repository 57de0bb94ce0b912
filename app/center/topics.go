package center

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/startstop"
)

const (
	// defaultTopicCheckInterval is how often a missing control topic is
	// looked for again.
	defaultTopicCheckInterval = 5 * time.Second
	// topicLogEvery spaces the repeated error while the topic is missing.
	topicLogEvery = time.Minute
)

// topicAdmin is what the control-topic check needs from Kafka.
type topicAdmin interface {
	ListTopics(ctx context.Context, topics ...string) (kadm.TopicDetails, error)
	CreateTopic(ctx context.Context, partitions int32, replicationFactor int16, configs map[string]*string, topic string) (kadm.CreateTopicResponse, error)
}

// topicWatch makes sure the control topic (and every lane's, kafka.lanes)
// exists before the center calls itself ready. A missing topic is not fatal: where topics are made by a
// separate job the center should simply wait for it. But it never waits
// silently: it logs an error naming the topic, the brokers and the fix at
// once and every minute after, and /readyz answers 503 with the reason.
// With kafka.create_topics it creates the topic instead. Once the topic is
// found the watch ends (the consumer joins the group on its own).
type topicWatch struct {
	cfg      config.Kafka
	adm      topicAdmin
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	problem string // why the center cannot be ready; "" once the topic exists
	kind    string // of the problem last logged
	logged  time.Time

	startstop.Base
}

func newTopicWatch(cfg config.Kafka, adm topicAdmin, interval time.Duration, now func() time.Time, log *slog.Logger) *topicWatch {
	if interval <= 0 {
		interval = defaultTopicCheckInterval
	}
	if now == nil {
		now = time.Now
	}
	return &topicWatch{
		cfg: cfg, adm: adm, interval: interval, now: now, log: log,
		problem: fmt.Sprintf("checking that control topic %s exists", cfg.ControlTopic),
	}
}

// Problem is why the center is not ready as far as the control topic goes;
// empty once the topic exists.
func (w *topicWatch) Problem() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.problem
}

// Start checks in a goroutine until the topic exists; it returns at once
// (see startstop.Base; Stop is Base's).
func (w *topicWatch) Start(ctx context.Context) error {
	return w.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		return func() error { w.run(r.Ctx); return nil }, nil
	})
}

func (w *topicWatch) run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.check(ctx) {
			return
		}
		t.Reset(w.interval)
	}
}

// topics are the control topics to wait for: kafka.control_topic and
// every lane's (kafka.lanes).
func (w *topicWatch) topics() []string {
	out := []string{w.cfg.ControlTopic}
	for _, l := range w.cfg.Lanes {
		out = append(out, w.cfg.LaneTopic(l))
	}
	return out
}

// check looks for the control topics once and creates the missing ones
// if allowed; it reports whether they all exist now.
func (w *topicWatch) check(parent context.Context) bool {
	for _, topic := range w.topics() {
		if !w.checkTopic(parent, topic) {
			return false
		}
	}
	w.ok()
	return true
}

// checkTopic looks for one control topic and creates it if allowed; it
// reports whether it exists now.
func (w *topicWatch) checkTopic(parent context.Context, topic string) bool {
	ctx, cancel := context.WithTimeout(parent, max(w.interval, 10*time.Second))
	defer cancel()
	details, err := w.adm.ListTopics(ctx, topic)
	if err == nil {
		if d, ok := details[topic]; ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			err = d.Err
		}
	}
	switch {
	case parent.Err() != nil:
		return false // stopping
	case err != nil:
		w.fail("unreachable", topic, fmt.Sprintf("cannot check control topic %s on brokers %v: %v", topic, w.cfg.Brokers, err), slog.LevelWarn)
		return false
	case details.Has(topic):
		return true
	case !w.cfg.CreateTopics:
		w.fail("missing", topic, fmt.Sprintf("control topic %s does not exist on brokers %v: create it (e.g. %d partitions) or set kafka.create_topics: true (EVENTCENTER_KAFKA_CREATE_TOPICS=true)",
			topic, w.cfg.Brokers, w.cfg.ControlPartitions), slog.LevelError)
		return false
	}
	// -1: the brokers' default replication factor (default.replication.factor).
	resp, err := w.adm.CreateTopic(ctx, int32(w.cfg.ControlPartitions), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		w.fail("create failed", topic, fmt.Sprintf("control topic %s does not exist on brokers %v and creating it failed: %v", topic, w.cfg.Brokers, err), slog.LevelError)
		return false
	}
	if err == nil {
		w.log.Info("created the control topic (kafka.create_topics)", "topic", topic, "partitions", w.cfg.ControlPartitions, "brokers", w.cfg.Brokers)
	}
	return true
}

// fail records why the center is not ready and logs it at once, then at
// most every topicLogEvery while the kind of problem stays the same (the
// text of a connection error may change at every try).
func (w *topicWatch) fail(kind, topic, problem string, level slog.Level) {
	kind += " " + topic
	w.mu.Lock()
	now := w.now()
	logIt := kind != w.kind || w.logged.IsZero() || now.Sub(w.logged) >= topicLogEvery
	w.problem = problem
	if logIt {
		w.kind, w.logged = kind, now
	}
	w.mu.Unlock()
	if logIt {
		w.log.Log(context.Background(), level, "not ready: "+problem, "topic", topic, "brokers", w.cfg.Brokers)
	}
}

func (w *topicWatch) ok() {
	w.mu.Lock()
	was, complained := w.problem, !w.logged.IsZero()
	w.problem = ""
	w.mu.Unlock()
	if complained {
		w.log.Info("control topic found", "topics", w.topics(), "was", was)
	}
}
