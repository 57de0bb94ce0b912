package config

import (
	"fmt"
	"regexp"
	"time"

	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
)

// Lane is an extra control topic with a consumer of its own (kafka.lanes;
// docs/fairness.md), so one tenant class's backlog never delays another's ingest.
// The default lane, id 0, is kafka.control_topic. Producers choose a lane
// by the topic they write to; the producer HTTP API writes the envelopes
// of the lane's BizIDs to its topic.
type Lane struct {
	// Name names the lane in logs and in its consumer group,
	// <kafka.group>.lane.<name>: letters, digits, '_' and '-'.
	Name string `yaml:"name"`
	// Topic is the lane's control topic; "" means
	// <kafka.control_topic>.lane.<name>.
	Topic string `yaml:"topic"`
	// DLQTopic is the lane's dead-letter topic; "" means <topic>.dlq.
	DLQTopic string `yaml:"dlq_topic"`
	// ID is the lane's number, 1 to 100: its Kafka partition p is
	// stored as partition id*10000 + p (ingest.LaneStride). Never reuse
	// an id for another topic while rows of the old one are kept.
	ID int `yaml:"id"`
	// BizIDs are the bizIDs whose envelopes the producer HTTP API writes
	// to this lane (a bizID is on at most one lane). Go producers choose
	// the lane themselves (clientlib.WithControlTopic).
	BizIDs []string `yaml:"biz_ids"`
	// FreshFetchWait overrides ingest.fresh_fetch_wait for this lane (0:
	// the same; negative: no wait).
	FreshFetchWait time.Duration `yaml:"fresh_fetch_wait"`
}

// LaneTopic is the lane's control topic.
func (k Kafka) LaneTopic(l Lane) string {
	if l.Topic != "" {
		return l.Topic
	}
	return k.ControlTopic + ".lane." + l.Name
}

// LaneDLQ is the lane's dead-letter topic.
func (k Kafka) LaneDLQ(l Lane) string {
	if l.DLQTopic != "" {
		return l.DLQTopic
	}
	return k.LaneTopic(l) + ingest.DLQSuffix
}

// LaneGroup is the lane's consumer group. The default lane keeps
// kafka.group, so its committed offsets stay.
func (k Kafka) LaneGroup(l Lane) string { return k.Group + ".lane." + l.Name }

// ControlTopicFor is the control topic the envelopes of bizID go to: its
// lane's, or kafka.control_topic.
func (k Kafka) ControlTopicFor(bizID string) string {
	for _, l := range k.Lanes {
		for _, b := range l.BizIDs {
			if b == bizID {
				return k.LaneTopic(l)
			}
		}
	}
	return k.ControlTopic
}

var laneName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateLanes checks kafka.lanes.
func (c *Config) validateLanes(bad func(string, string, ...any)) {
	k := c.Kafka
	// Every control and dead-letter topic, with the field that names it.
	topics := map[string]string{k.ControlTopic: "kafka.control_topic", k.DLQ(): "kafka.dlq_topic"}
	names, ids, bizIDs := map[string]int{}, map[int]int{}, map[string]int{}
	for i, l := range k.Lanes {
		field := fmt.Sprintf("kafka.lanes[%d]", i)
		switch {
		case !laneName.MatchString(l.Name):
			bad(field+".name", "want 1 to 64 letters, digits, '_' or '-', got %q", l.Name)
		default:
			if j, ok := names[l.Name]; ok {
				bad(field+".name", "duplicate: kafka.lanes[%d] is named %q too", j, l.Name)
			}
			names[l.Name] = i
		}
		if l.ID < 1 || l.ID > ingest.MaxLane {
			bad(field+".id", "must be 1 to %d (0 is the default lane, kafka.control_topic), got %d", ingest.MaxLane, l.ID)
		} else if j, ok := ids[l.ID]; ok {
			bad(field+".id", "duplicate: kafka.lanes[%d] has id %d too", j, l.ID)
		} else {
			ids[l.ID] = i
		}
		if !laneName.MatchString(l.Name) {
			continue // the default topics are named after it
		}
		for _, t := range []struct{ field, topic string }{{field + ".topic", k.LaneTopic(l)}, {field + ".dlq_topic", k.LaneDLQ(l)}} {
			if err := kafka.CheckTopic(t.topic); err != nil {
				bad(t.field, "%v", err)
				continue
			}
			if other, ok := topics[t.topic]; ok {
				bad(t.field, "%q is already %s: every lane needs control and dead-letter topics of its own", t.topic, other)
				continue
			}
			topics[t.topic] = t.field
		}
		for j, b := range l.BizIDs {
			if b == "" {
				bad(fmt.Sprintf("%s.biz_ids[%d]", field, j), "is empty")
				continue
			}
			if other, ok := bizIDs[b]; ok && other != i {
				bad(fmt.Sprintf("%s.biz_ids[%d]", field, j), "bizID %q is on kafka.lanes[%d] already: a bizID is on one lane", b, other)
				continue
			}
			bizIDs[b] = i
		}
		if l.FreshFetchWait >= MaxFreshFetchWait {
			bad(field+".fresh_fetch_wait", "must be under %s (negative: no wait)", MaxFreshFetchWait)
		}
	}
}
