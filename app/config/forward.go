package config

import (
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq/rmqrules"
	"github.com/eventcenter/eventcenter/ingest"
)

// Forward configures forwarding.
type Forward struct {
	DefaultTarget string        `yaml:"default_target" env:"EVENTCENTER_FORWARD_DEFAULT_TARGET"`
	MaxAttempts   int           `yaml:"max_attempts" env:"EVENTCENTER_FORWARD_MAX_ATTEMPTS"`
	BackoffBase   time.Duration `yaml:"backoff_base" env:"EVENTCENTER_FORWARD_BACKOFF_BASE"`
	BackoffCap    time.Duration `yaml:"backoff_cap" env:"EVENTCENTER_FORWARD_BACKOFF_CAP"`
	ScanInterval  time.Duration `yaml:"scan_interval" env:"EVENTCENTER_FORWARD_SCAN_INTERVAL"`
	Lease         time.Duration `yaml:"lease" env:"EVENTCENTER_FORWARD_LEASE"`
	// SendTimeout bounds one send to a target; it must be shorter than lease.
	SendTimeout time.Duration `yaml:"send_timeout" env:"EVENTCENTER_FORWARD_SEND_TIMEOUT"`
	// InlineTimeout bounds an inline send: what a store transaction makes
	// sendable is sent before the write and written sent at once
	// (forwarder.Config.InlineTimeout); negative turns inline sends off. It
	// must be shorter than lease.
	InlineTimeout time.Duration `yaml:"inline_timeout" env:"EVENTCENTER_FORWARD_INLINE_TIMEOUT"`
	// MaxDelay bounds a scheduled message (ec-deliver-at, ec-delay): at
	// most this far after its PREPARE's record time, else the PREPARE is
	// dead-lettered (docs/scheduled.md). Default 90 days.
	MaxDelay time.Duration `yaml:"max_delay" env:"EVENTCENTER_FORWARD_MAX_DELAY"`
	Targets  []Target      `yaml:"targets"`
	// Order configures per-key order (docs/ordering.md).
	Order Order `yaml:"order"`
	// FairClaims makes the forwarder's claims serve bizIDs in turn, by
	// weight (docs/fairness.md); false claims the oldest due messages
	// first, as before. Default true.
	FairClaims bool `yaml:"fair_claims" env:"EVENTCENTER_FORWARD_FAIR_CLAIMS"`
	// Biz are the per-bizID weights and limits (ForwardBiz).
	Biz []ForwardBiz `yaml:"biz"`
}

// Order configures per-key order.
type Order struct {
	// Dead is what a message that goes DEAD does to its order key by
	// default: "hold" (the later messages wait for an operator; the
	// default) or "skip" (they go on).
	Dead string `yaml:"dead" env:"EVENTCENTER_FORWARD_ORDER_DEAD"`
	// Biz overrides Dead per bizID and can order a bizID by forward key.
	Biz []OrderBiz `yaml:"biz"`
}

// OrderBiz is the order setting of one bizID.
type OrderBiz struct {
	BizID string `yaml:"biz_id"`
	// Dead overrides Order.Dead ("" keeps it).
	Dead string `yaml:"dead"`
	// ByForwardKey orders the bizID's messages without an ec-order-key by
	// their forward key.
	ByForwardKey bool `yaml:"by_forward_key"`
}

// ReleaseOnDead tells whether a DEAD message of bizID releases its order
// key (setting "skip").
func (o Order) ReleaseOnDead(bizID string) bool {
	d := o.Dead
	for _, b := range o.Biz {
		if b.BizID == bizID && b.Dead != "" {
			d = b.Dead
		}
	}
	return d == "skip"
}

// ByForwardKey tells whether bizID is ordered by forward key.
func (o Order) ByForwardKey(bizID string) bool {
	for _, b := range o.Biz {
		if b.BizID == bizID {
			return b.ByForwardKey
		}
	}
	return false
}

// Target is one named forward target.
type Target struct {
	Name string `yaml:"name"`
	// Type is "kafka" or "rocketmq".
	Type string `yaml:"type"`
	// Brokers (kafka) default to kafka.brokers.
	Brokers []string `yaml:"brokers"`
	// AutoCreateTopics lets the Kafka target create missing business topics.
	AutoCreateTopics bool `yaml:"auto_create_topics"`
	// NameServers (rocketmq) are ip:port literals.
	NameServers []string `yaml:"name_servers"`
	// Group is the RocketMQ producer group.
	Group string `yaml:"group"`
	// MaxMessageBytes is the largest message the target's producer sends:
	// for Kafka the batch limit of a large record (set it to at most the
	// forward topics' max.message.bytes), for RocketMQ the body limit (the
	// brokers' maxMessageSize). 0 means: Kafka, ingest.max_payload_bytes
	// plus RecordOverhead (at least 1 MiB plus RecordOverhead); RocketMQ,
	// 4 MiB. It must fit every message ingest accepts (see
	// MinMessageBytes).
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// Compression is a Kafka target's codec, as kafka.compression ("":
	// gzip, which every mainstream consumer reads without a codec
	// package; KafkaJS 2.x reads no snappy, franz-go's own default).
	Compression string `yaml:"compression"`
	// Auth is the target's tls and sasl (kafka; see security.go).
	Auth kafkaauth.Config `yaml:",inline"`
	// ACL is the target's access_key, secret_key (rocketmq).
	ACL RocketMQACL `yaml:",inline"`
}

// Sizes that tie ingest's payload limit to the producers' (checked against
// ingest and the targets by app/center's tests).
const (
	// RecordOverhead is what a forwarded Kafka record may take beyond the
	// payload: ingest.RecordOverhead (64 KiB of forward key, headers and
	// id) plus kafka.RecordFraming (2 KiB).
	RecordOverhead = ingest.RecordOverhead + kafka.RecordFraming
	// RocketMQMaxMessageBytes is a RocketMQ target's default
	// max_message_bytes.
	RocketMQMaxMessageBytes = rmqrules.DefaultMaxMessageBytes
)

// MinMessageBytes is the smallest max_message_bytes of a target of the
// given type that can send every message ingest accepts.
func (c *Config) MinMessageBytes(typ string) int {
	if typ == "rocketmq" {
		return c.Ingest.MaxPayloadBytes
	}
	return c.Ingest.MaxPayloadBytes + RecordOverhead
}

// MessageBytes is target t's max_message_bytes, or its default.
func (c *Config) MessageBytes(t Target) int {
	switch {
	case t.MaxMessageBytes != 0:
		return t.MaxMessageBytes
	case t.Type == "rocketmq":
		return RocketMQMaxMessageBytes
	}
	// Never below the target's default: a Kafka target batches small
	// records within min(1,000,012, this), and a small payload limit
	// should not shrink its batches.
	return max(c.MinMessageBytes(t.Type), kafka.DefaultMaxMessageBytes)
}

// forwarderPaths are the settings behind forwarder.Config's fields; those
// of each forward.biz[] entry are added by (*Config).forwarderPaths.
var forwarderPaths = fieldPaths{
	// The center makes the targets of forward.targets (checked below).
	"Targets":       notASetting,
	"DefaultTarget": "forward.default_target",
	"MaxAttempts":   "forward.max_attempts",
	"Backoff.Base":  "forward.backoff_base",
	"Backoff.Cap":   "forward.backoff_cap",
	"ScanInterval":  "forward.scan_interval",
	"Lease":         "forward.lease",
	"SendTimeout":   "forward.send_timeout",
	"InlineTimeout": "forward.inline_timeout",
}

// forwardBizSettings are the settings of a forward.biz[] entry behind a
// forwarder.BizLimits's fields.
var forwardBizSettings = map[string]string{"Weight": "weight", "Rate": "rate", "Burst": "burst", "MaxInFlight": "max_in_flight"}

// forwarderPaths is forwarderPaths with the fields of every forward.biz[]
// entry (Biz["a"].Rate is forward.biz[i].rate).
func (c *Config) forwarderPaths() fieldPaths {
	ids := make([]string, len(c.Forward.Biz))
	for i, b := range c.Forward.Biz {
		ids[i] = b.BizID
	}
	return forwarderPaths.withEntries("Biz", "forward.biz", ids, forwardBizSettings)
}

// ForwarderConfig is the forwarder.Config the settings make
// (forwarderPaths): the forwarder's defaults, then forward.*. What is not
// a setting (the targets, the cluster's gates, callbacks, the clock, the
// logger) the center adds.
func (c *Config) ForwarderConfig() forwarder.Config {
	f := c.Forward
	fc := forwarder.DefaultConfig()
	fc.DefaultTarget = f.DefaultTarget
	fc.MaxAttempts = f.MaxAttempts
	fc.Backoff.Base, fc.Backoff.Cap = f.BackoffBase, f.BackoffCap
	fc.ScanInterval = f.ScanInterval
	fc.Lease = f.Lease
	fc.SendTimeout = f.SendTimeout
	fc.InlineTimeout = f.InlineTimeout
	fc.ReleaseOnDead = f.Order.ReleaseOnDead
	fc.Biz = f.BizLimits()
	fc.MetricBizIDs = c.MetricBizIDs()
	fc.OldestFirst = !f.FairClaims
	return fc
}

// validateForward checks forward: forwarder.Config.Validate's limits
// under the settings' names, and what only the settings have (targets by
// name and type, order). ingest.Config.Validate bounds the schedule
// (forward.max_delay, validateIngest).
func (c *Config) validateForward(bad func(string, string, ...any)) {
	f := c.Forward
	c.forwarderPaths().report("forward", c.ForwarderConfig().Validate(), bad)
	if f.Order.Dead != "" && f.Order.Dead != "hold" && f.Order.Dead != "skip" {
		bad("forward.order.dead", "must be hold or skip, not %q", f.Order.Dead)
	}
	for i, b := range f.Order.Biz {
		if b.BizID == "" {
			bad(fmt.Sprintf("forward.order.biz[%d].biz_id", i), "required")
		}
		if b.Dead != "" && b.Dead != "hold" && b.Dead != "skip" {
			bad(fmt.Sprintf("forward.order.biz[%d].dead", i), "must be hold or skip, not %q", b.Dead)
		}
	}
	names := map[string]bool{}
	for i, t := range f.Targets {
		field := fmt.Sprintf("forward.targets[%d]", i)
		if t.Name == "" {
			bad(field+".name", "is required")
		}
		if names[t.Name] {
			bad(field+".name", "duplicate target %q", t.Name)
		}
		names[t.Name] = true
		switch t.Type {
		case "kafka":
			for j, b := range t.Brokers {
				if !hostPort(b) {
					bad(fmt.Sprintf("%s.brokers[%d]", field, j), "%q is not host:port", b)
				}
			}
			if _, err := kafkarec.Compression(t.Compression); err != nil {
				bad(field+".compression", "%v", err)
			}
		case "rocketmq":
			if len(t.NameServers) == 0 {
				bad(field+".name_servers", "at least one ip:port is required for a rocketmq target")
			}
			for j, a := range t.NameServers {
				if err := rmqrules.CheckNameServer(a); err != nil {
					bad(fmt.Sprintf("%s.name_servers[%d]", field, j), "%v", err)
				}
			}
			if t.Compression != "" {
				bad(field+".compression", "is for kafka targets")
			}
			if t.Group != "" {
				if err := rmqrules.CheckGroup(t.Group); err != nil {
					bad(field+".group", "%v", err)
				}
			}
		default:
			bad(field+".type", "want kafka or rocketmq, got %q", t.Type)
		}
		c.validateMessageBytes(field, t, bad)
	}
	if !names[f.DefaultTarget] {
		bad("forward.default_target", "%q is not one of forward.targets", f.DefaultTarget)
	}
}

// validateMessageBytes checks that target t can send every message ingest
// accepts.
func (c *Config) validateMessageBytes(field string, t Target, bad func(string, string, ...any)) {
	if t.Type != "kafka" && t.Type != "rocketmq" {
		return
	}
	n, least := c.MessageBytes(t), c.MinMessageBytes(t.Type)
	switch {
	case t.MaxMessageBytes < 0:
		bad(field+".max_message_bytes", "must not be negative (0 means the default)")
	case t.Type == "kafka" && n > kafka.MaxBatchBytes:
		bad(field+".max_message_bytes", "must be at most %d (franz-go's largest batch), got %d", kafka.MaxBatchBytes, n)
	case n < least && t.Type == "kafka":
		// Lowering the payload limit is a fix only when n leaves room for
		// a payload of at least one byte after the overhead.
		lower := fmt.Sprintf(" or lower ingest.max_payload_bytes to at most %d", n-RecordOverhead)
		if n-RecordOverhead < 1 {
			lower = fmt.Sprintf(" (%d leaves no room for a payload after the %d bytes)", n, RecordOverhead)
		}
		bad(field+".max_message_bytes", "%d is below ingest.max_payload_bytes (%d) + %d bytes of forward key, headers, id and framing: a message ingest accepts could never be sent; raise it to at least %d (and the forward topics' max.message.bytes)%s",
			n, c.Ingest.MaxPayloadBytes, RecordOverhead, least, lower)
	case n < least:
		what := "set"
		if t.MaxMessageBytes == 0 {
			what = "defaults to RocketMQ's 4 MiB, which is"
		}
		bad(field+".max_message_bytes", "%s %d, below ingest.max_payload_bytes (%d): a message ingest accepts could never be sent; raise the brokers' maxMessageSize and this, or lower ingest.max_payload_bytes", what, n, c.Ingest.MaxPayloadBytes)
	}
}
