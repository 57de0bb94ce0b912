package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/producerapi"
)

// Ingress is the producer HTTP API (package producerapi): its own listener,
// off unless listen is set (dev turns it on).
type Ingress struct {
	// Listen is host:port of the producer API; "" turns it off.
	Listen string `yaml:"listen" env:"EVENTCENTER_INGRESS_LISTEN"`
	// Tokens are the producer tokens, each scoped to bizIDs; distinct
	// from admin tokens.
	Tokens []IngressToken `yaml:"tokens"`
	// Insecure accepts requests without a token for every bizID (dev
	// only; refused on a listen address other hosts can reach).
	Insecure bool `yaml:"insecure" env:"EVENTCENTER_INGRESS_INSECURE"`
	// Rate and Burst are each token's token bucket, in envelopes per
	// second (a batch counts each of its envelopes, a GET counts one);
	// a token may set its own.
	Rate  float64 `yaml:"rate" env:"EVENTCENTER_INGRESS_RATE"`
	Burst int     `yaml:"burst" env:"EVENTCENTER_INGRESS_BURST"`
	// MaxBatch bounds the envelopes of one batch request; MaxBatchBytes
	// its body.
	MaxBatch      int `yaml:"max_batch" env:"EVENTCENTER_INGRESS_MAX_BATCH"`
	MaxBatchBytes int `yaml:"max_batch_bytes" env:"EVENTCENTER_INGRESS_MAX_BATCH_BYTES"`
	// MaxConcurrent caps the requests served at once; the rest are
	// answered 503 with Retry-After at once.
	MaxConcurrent int `yaml:"max_concurrent" env:"EVENTCENTER_INGRESS_MAX_CONCURRENT"`
	// ProduceTimeout bounds waiting for the broker's acknowledgement; the
	// request is answered 503 after it.
	ProduceTimeout time.Duration `yaml:"produce_timeout" env:"EVENTCENTER_INGRESS_PRODUCE_TIMEOUT"`
	// ReadTimeout and IdleTimeout as for http (the write timeout is
	// produce_timeout plus 10s).
	ReadTimeout time.Duration `yaml:"read_timeout" env:"EVENTCENTER_INGRESS_READ_TIMEOUT"`
	IdleTimeout time.Duration `yaml:"idle_timeout" env:"EVENTCENTER_INGRESS_IDLE_TIMEOUT"`
	// TLS serves the API over HTTPS; the files are re-read when they
	// change.
	TLS IngressTLS `yaml:"tls"`
}

// IngressToken is one producer token.
type IngressToken struct {
	Name string `yaml:"name"`
	// BizIDs the token may send for and read; "*" is every bizID.
	BizIDs []string `yaml:"biz_ids"`
	Token  string   `yaml:"token"`
	// TokenFile holds the token instead of Token; it is re-read on change
	// or SIGHUP.
	TokenFile string `yaml:"token_file"`
	// Rate and Burst override ingress.rate and ingress.burst.
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
}

// IngressTLS is the producer API's certificate.
type IngressTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// defaultIngress is the producer API's defaults (producerapi's own), off.
func defaultIngress() Ingress {
	return Ingress{Rate: producerapi.DefaultRate, Burst: producerapi.DefaultBurst, MaxBatch: producerapi.DefaultMaxBatch,
		MaxBatchBytes: producerapi.DefaultMaxBatchBytes, ProduceTimeout: producerapi.DefaultProduceTimeout,
		MaxConcurrent: producerapi.DefaultMaxConcurrent,
		ReadTimeout:   30 * time.Second, IdleTimeout: 2 * time.Minute}
}

// ingressPaths are the settings behind producerapi.Config's fields.
var ingressPaths = fieldPaths{
	// The center makes the producer and the store.
	"Producer":       notASetting,
	"Store":          notASetting,
	"Rate":           "ingress.rate",
	"Burst":          "ingress.burst",
	"MaxBatch":       "ingress.max_batch",
	"MaxBatchBytes":  "ingress.max_batch_bytes",
	"MaxConcurrent":  "ingress.max_concurrent",
	"ProduceTimeout": "ingress.produce_timeout",
	// ingest's, checked by its Validate (validateIngest).
	"MaxPayload": reportedAs("ingest.max_payload_bytes"),
	"MaxDelay":   reportedAs("forward.max_delay"),
}

// ProducerAPIConfig is the producerapi.Config the settings make
// (ingressPaths): the producer API's defaults, then ingress.*,
// kafka.control_topic and kafka.lanes, ingest.max_payload_bytes and
// forward.max_delay. What is not a setting (the producer, the store,
// topic checks, the scheduling gate, tokens as they are re-read, the
// clock, the logger, the registerer) the center adds.
func (c *Config) ProducerAPIConfig() producerapi.Config {
	in := c.Ingress
	pc := producerapi.DefaultConfig()
	pc.ControlTopic = c.Kafka.ControlTopic
	pc.ControlTopicFor = c.Kafka.ControlTopicFor
	pc.MaxPayload = c.Ingest.MaxPayloadBytes
	pc.MaxDelay = c.Forward.MaxDelay
	pc.Insecure = in.Insecure
	pc.Rate, pc.Burst = in.Rate, in.Burst
	pc.MaxBatch, pc.MaxBatchBytes = in.MaxBatch, in.MaxBatchBytes
	pc.MaxConcurrent = in.MaxConcurrent
	pc.ProduceTimeout = in.ProduceTimeout
	return pc
}

// resolveIngressSecrets reads ingress.tokens[].token_file.
func (c *Config) resolveIngressSecrets(read func(field, path string, into *string)) {
	for i := range c.Ingress.Tokens {
		t := &c.Ingress.Tokens[i]
		read(fmt.Sprintf("ingress.tokens[%d].token_file", i), t.TokenFile, &t.Token)
	}
}

// validateIngress checks the ingress section: producerapi.Config.Validate's
// limits under the settings' names, and what only the settings have (the
// listener, TLS, tokens against each other and the admin tokens);
// nothing is checked but the kind of values when the API is off.
func (c *Config) validateIngress(bad func(string, string, ...any)) {
	in := c.Ingress
	if in.Listen == "" {
		return
	}
	if err := checkListen(in.Listen); err != nil {
		bad("ingress.listen", "%v", err)
	} else if in.Listen == c.HTTP.Listen && !strings.HasSuffix(in.Listen, ":0") {
		bad("ingress.listen", "must differ from http.listen (%s)", c.HTTP.Listen)
	}
	if len(in.Tokens) == 0 && !in.Insecure {
		bad("ingress.tokens", "at least one producer token is required (name, biz_ids, token or token_file), or ingress.insecure on a loopback listen address")
	}
	if in.Insecure && len(in.Tokens) == 0 && !LoopbackListen(in.Listen) {
		bad("ingress.insecure", "accepts messages without a token and is refused on ingress.listen %s, which is reachable from other hosts: configure ingress.tokens, or listen on 127.0.0.1", in.Listen)
	}
	ingressPaths.report("ingress", c.ProducerAPIConfig().Validate(), bad)
	if in.ReadTimeout <= 0 {
		bad("ingress.read_timeout", "must be positive")
	}
	if in.IdleTimeout <= 0 {
		bad("ingress.idle_timeout", "must be positive")
	}
	if (in.TLS.CertFile == "") != (in.TLS.KeyFile == "") {
		bad("ingress.tls", "cert_file and key_file go together")
	}
	adminSecrets := map[string]bool{}
	for _, t := range c.Admin.Tokens {
		adminSecrets[t.Token] = true
	}
	names, secrets := map[string]bool{}, map[string]bool{}
	for i, t := range in.Tokens {
		f := fmt.Sprintf("ingress.tokens[%d]", i)
		checkTokenName(bad, f, t.Name, names)
		if checkTokenSecret(bad, f, t.Token, secrets, "same secret as another producer token") && adminSecrets[t.Token] {
			bad(f+".token", "same secret as an admin token: producer tokens must be distinct from admin tokens")
		}
		if len(t.BizIDs) == 0 {
			bad(f+".biz_ids", "at least one bizID (or \"*\" for every bizID) is required")
		}
		for j, b := range t.BizIDs {
			if b == "*" {
				continue
			}
			probe := envelope.Envelope{Type: envelope.Commit, BizID: b, MessageKey: "k"}
			if err := probe.Validate(); err != nil {
				bad(fmt.Sprintf("%s.biz_ids[%d]", f, j), "%q is not a bizID (at most %d bytes, no ':', spaces or control characters) nor \"*\"", b, envelope.MaxBizIDLen)
			}
		}
		if t.Rate < 0 {
			bad(f+".rate", "must not be negative (0 means ingress.rate)")
		}
		if t.Burst < 0 {
			bad(f+".burst", "must not be negative (0 means ingress.burst)")
		}
	}
}
