package center

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/ingest"
)

// newLaneIngesters builds one ingester per control lane (kafka.lanes):
// the default lane's from base (kafka.control_topic in kafka.group,
// so its committed offsets stay), then each extra lane's with its own
// topic, dead-letter topic and consumer group (<group>.lane.<name>). All
// share the ownership set and one set of metrics.
func newLaneIngesters(base ingest.Config, k config.Kafka, reg prometheus.Registerer, st ingest.Store, owned *ingest.Ownership) ([]*ingest.Ingester, error) {
	met, err := ingest.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	base.Metrics = met
	def, err := ingest.New(base, st, owned)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	out := []*ingest.Ingester{def}
	for _, l := range k.Lanes {
		lc := base
		lc.Lane, lc.LaneName = l.ID, l.Name
		lc.ControlTopic = k.LaneTopic(l)
		lc.DLQTopic = k.LaneDLQ(l)
		lc.Group = k.LaneGroup(l)
		if l.FreshFetchWait != 0 {
			lc.FreshFetchWait = l.FreshFetchWait
		}
		lc.Logger = base.Logger.With("lane_name", l.Name)
		in, err := ingest.New(lc, st, owned)
		if err != nil {
			return nil, fmt.Errorf("ingest: lane %s: %w", l.Name, err)
		}
		out = append(out, in)
	}
	return out, nil
}

// laneDLQs are the admin handler's dead-letter topics of the extra lanes:
// each lane's, replaying to its control topic, on the admin's client.
func laneDLQs(k config.Kafka, client *kgo.Client) []admin.LaneDLQ {
	out := make([]admin.LaneDLQ, 0, len(k.Lanes))
	for _, l := range k.Lanes {
		out = append(out, admin.LaneDLQ{Lane: l.Name, DLQ: admin.NewKafkaDLQ(client, k.LaneDLQ(l), k.LaneTopic(l))})
	}
	return out
}

// laneNames are the lanes' names for messages, the default lane's first.
func (c *Center) laneName(i int) string {
	if i == 0 {
		return "default lane"
	}
	return "lane " + c.cfg.Kafka.Lanes[i-1].Name
}

// laneTopicGroup are lane i's control topic and consumer group.
func (c *Center) laneTopicGroup(i int) (topic, group string) {
	if i == 0 {
		return c.cfg.Kafka.ControlTopic, c.cfg.Kafka.Group
	}
	l := c.cfg.Kafka.Lanes[i-1]
	return c.cfg.Kafka.LaneTopic(l), c.cfg.Kafka.LaneGroup(l)
}

// lanesReady says why some lane's consumer is not consuming ("" when
// every lane's is): each must be in its group with an assignment and have
// a fetch answered (ingest.Consuming). details adds the broker error.
func (c *Center) lanesReady(details bool) string {
	for i, in := range c.ingesters {
		topic, group := c.laneTopicGroup(i)
		if !in.Joined() {
			return fmt.Sprintf("waiting for consumer group %s to assign partitions of control topic %s", group, topic)
		}
		// In the group is not yet consuming: after a broker restart the
		// assignment outlives the connection, and records wait until a
		// fetch succeeds again.
		if ok, why, cause := in.Consuming(); !ok {
			msg := "ingest: " + why
			if i > 0 {
				msg = fmt.Sprintf("ingest (%s, topic %s): %s", c.laneName(i), topic, why)
			}
			if cause != nil && details {
				msg += ": " + cause.Error()
			}
			return msg
		}
	}
	return ""
}

// startIngest starts every lane's consumer; on an error the center's Stop
// stops those started.
func (c *Center) startIngest(ctx context.Context) error {
	for i, in := range c.ingesters {
		if err := in.Start(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.laneName(i), err)
		}
	}
	return nil
}

// stopIngest stops every lane's consumer at once (each finishes its batch
// and commits) and waits for all.
func (c *Center) stopIngest(ctx context.Context) error {
	errs := make([]error, len(c.ingesters))
	var wg sync.WaitGroup
	for i, in := range c.ingesters {
		wg.Go(func() {
			if err := in.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.laneName(i), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// differingPrepares sums the lanes' counts of duplicate PREPAREs with a
// different body, per bizID.
func (c *Center) differingPrepares() map[string]int64 {
	out := map[string]int64{}
	for _, in := range c.ingesters {
		for b, n := range in.DifferingPrepares() {
			out[b] += n
		}
	}
	return out
}
