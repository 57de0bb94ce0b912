package clientlib

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
)

// Partitioner is the control records' partitioner: Kafka's default for
// keyed records (murmur2 of the record key, envelope.PartitionFor), except
// that the records of a message with an order key go to the partition of
// bizID:orderKey, so that one key's envelopes are read, and their COMMITs
// applied, in the order they were sent. The producer's own client uses it;
// a client passed with WithClient must be created with
// kgo.RecordPartitioner(clientlib.Partitioner()) for ordered messages.
func Partitioner() kgo.Partitioner { return kafkarec.Partitioner() }

// OrderRoute returns ctx carrying the routing key of a message with an
// order key (ctx itself without one). A control record produced with it, by
// a client using Partitioner, goes to the partition of bizID:orderKey: use
// it for the records of an ordered message sent with your own client.
func OrderRoute(ctx context.Context, bizID, orderKey string) context.Context {
	return kafkarec.OrderRoute(ctx, bizID, orderKey)
}

// CommitOrdered is Commit for a message with an order key: its COMMIT goes
// to the partition its PREPARE went to (see Partitioner).
func (p *Producer) CommitOrdered(ctx context.Context, bizID, key, orderKey string) error {
	return p.Commit(OrderRoute(ctx, bizID, orderKey), bizID, key)
}

// RollbackOrdered is Rollback for a message with an order key.
func (p *Producer) RollbackOrdered(ctx context.Context, bizID, key, orderKey string) error {
	return p.Rollback(OrderRoute(ctx, bizID, orderKey), bizID, key)
}
