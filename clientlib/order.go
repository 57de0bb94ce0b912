package clientlib

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// routeKey is the record context key under which a control record carries
// the key whose partition it goes to (envelope.OrderRoutingKey).
type routeKey struct{}

// Partitioner is the control records' partitioner: Kafka's default for
// keyed records (murmur2 of the record key, envelope.PartitionFor), except
// that the records of a message with an order key go to the partition of
// bizID:orderKey, so that one key's envelopes are read, and their COMMITs
// applied, in the order they were sent. The producer's own client uses it;
// a client passed with WithClient must be created with
// kgo.RecordPartitioner(clientlib.Partitioner()) for ordered messages.
func Partitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int {
			key := string(r.Key)
			if r.Context != nil {
				if k, ok := r.Context.Value(routeKey{}).(string); ok {
					key = k
				}
			}
			return int(envelope.PartitionFor(key, n))
		}
	})
}

// routed returns ctx carrying the routing key of a message with an order
// key (ctx itself without one).
func routed(ctx context.Context, bizID, orderKey string) context.Context {
	if orderKey == "" {
		return ctx
	}
	return context.WithValue(ctx, routeKey{}, envelope.OrderRoutingKey(bizID, orderKey))
}

// CommitOrdered is Commit for a message with an order key: its COMMIT goes
// to the partition its PREPARE went to (see Partitioner).
func (p *Producer) CommitOrdered(ctx context.Context, bizID, key, orderKey string) error {
	return p.Commit(routed(ctx, bizID, orderKey), bizID, key)
}

// RollbackOrdered is Rollback for a message with an order key.
func (p *Producer) RollbackOrdered(ctx context.Context, bizID, key, orderKey string) error {
	return p.Rollback(routed(ctx, bizID, orderKey), bizID, key)
}
