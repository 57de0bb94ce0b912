package ingest

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store"
)

// Control lanes. A lane is a control topic with its own consumer (an
// Ingester of its own, in a consumer group of its own), so that one
// tenant class's backlog never delays another's ingest: the default lane
// (id 0) is kafka.control_topic; lanes 1..MaxLane are extra topics
// (app/config kafka.lanes).
//
// The store knows no lanes: a row ingested from lane L's Kafka partition p
// is stored with partition L*LaneStride + p, its store partition. The
// ownership set (Ownership), the verifier's and forwarder's claims, the
// order checks and the eventcenter_consumer_lag metric's partition label
// all use store partitions, so one ownership set covers every lane; the
// default lane's store partitions are its Kafka partitions, as before
// lanes. Dead letters keep the Kafka partition (ec-dlq-partition) with the
// lane's topic (ec-dlq-topic).

// LaneStride separates the lanes' store partitions: lane L's Kafka
// partition p is store partition L*LaneStride + p (store.LaneStride).
const LaneStride = store.LaneStride

// MaxLane is the highest lane id: store partitions stay below
// (MaxLane+1)*LaneStride, far within the integer partition column of
// every store.
const MaxLane = 100

// StorePartition is the store partition of lane lane's Kafka partition p.
func StorePartition(lane int, p int32) int32 { return int32(lane)*LaneStride + p }

// LanePartition splits a store partition into its lane and Kafka
// partition (store.LanePartition).
func LanePartition(stored int32) (lane int, p int32) { return store.LanePartition(stored) }

// storePartitions maps Kafka partitions of this ingester's lane to store
// partitions.
func (in *Ingester) storePartitions(parts []int32) []int32 {
	out := make([]int32, len(parts))
	for i, p := range parts {
		out[i] = StorePartition(in.cfg.Lane, p)
	}
	return out
}

// beyondStride is the error of a record on a Kafka partition a lane
// cannot have: its store partition would be the next lane's (lane 0's
// partition 10000 is lane 1's 0), sharing that partition's sent
// watermark and claims. The record goes to the dead-letter topic, named
// with this reason, rather than being applied.
func beyondStride(rec *kgo.Record) error {
	return &envelope.DecodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Field: "partition",
		Reason: fmt.Sprintf("a control topic may have at most %d partitions (a lane's store partitions are lane*%d + partition), so partition %d would be stored as the next lane's; produce to a topic of at most %d partitions (Kafka cannot remove partitions: a new topic)",
			LaneStride, LaneStride, rec.Partition, LaneStride),
		Err: envelope.ErrInvalid}
}
