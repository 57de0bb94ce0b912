package kafkarec

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// routeKey is the record context key under which a control record carries
// the key whose partition it goes to (envelope.OrderRoutingKey).
type routeKey struct{}

// Partitioner is the control records' partitioner, for every producer of
// control records (clientlib's and the center's producer API): Kafka's
// default for keyed records (murmur2 of the record key,
// envelope.PartitionFor), except that a record produced with OrderRoute's
// context goes to the partition of bizID:orderKey.
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

// OrderRoute returns ctx carrying the routing key of a message with an
// order key (ctx itself without one); see Partitioner.
func OrderRoute(ctx context.Context, bizID, orderKey string) context.Context {
	if orderKey == "" {
		return ctx
	}
	return context.WithValue(ctx, routeKey{}, envelope.OrderRoutingKey(bizID, orderKey))
}
