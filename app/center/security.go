package center

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
)

// kafkaCheckTimeout bounds the start-up check of each Kafka cluster.
const kafkaCheckTimeout = 10 * time.Second

// checkKafka connects to the control cluster and to each Kafka target's
// cluster with their TLS and SASL settings before anything starts, so that
// a wrong password, an untrusted or expired certificate, or TLS on one side
// only is a clear start-up error rather than a consumer that retries
// forever. Unreachable brokers are only logged: the center waits for Kafka
// to come back, as it always has.
func (c *Center) checkKafka(ctx context.Context, cfg config.Config, opt Options) error {
	type cluster struct {
		what    string
		brokers []string
		auth    kafkaauth.Config
	}
	clusters := []cluster{{"kafka (kafka.brokers)", cfg.Kafka.Brokers, cfg.Kafka.Auth}}
	for _, t := range cfg.Forward.Targets {
		if t.Type != "kafka" {
			continue
		}
		if _, replaced := opt.Targets[t.Name]; replaced {
			continue
		}
		brokers := t.Brokers
		if len(brokers) == 0 {
			brokers = cfg.Kafka.Brokers
		}
		auth := cfg.TargetAuth(t)
		if slices.ContainsFunc(clusters, func(c cluster) bool {
			return slices.Equal(c.brokers, brokers) && c.auth == auth
		}) {
			continue
		}
		clusters = append(clusters, cluster{fmt.Sprintf("forward target %q", t.Name), brokers, auth})
	}
	for _, cl := range clusters {
		err := cl.auth.Check(ctx, cl.brokers, kafkaCheckTimeout, opt.KafkaOptions...)
		switch {
		case err == nil:
		case errors.Is(err, kafkaauth.ErrUnreachable):
			c.log.Warn("kafka is not reachable at start-up; the center keeps trying",
				"cluster", cl.what, "brokers", strings.Join(cl.brokers, ","), "err", err)
		default:
			return fmt.Errorf("%s: connect to %s: %w", cl.what, strings.Join(cl.brokers, ","), err)
		}
	}
	return nil
}
