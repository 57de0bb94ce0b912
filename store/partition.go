package store

import "fmt"

// LaneStride separates the control lanes' store partitions (ingest's
// lanes, app/config kafka.lanes): control lane L's Kafka partition p
// is stored as partition L*LaneStride + p, so one partition column, one
// ownership set and the claims on owned partitions serve every lane
// without a schema change. It is 10× the most partitions a control topic
// may have (app/config MaxControlPartitions, 1000), and a store
// partition reads at a glance: 20007 is lane 2, partition 7. The default
// lane's (0) store partitions are its Kafka partitions.
const LaneStride = 10000

// LanePartition splits a store partition into its control lane and Kafka
// partition.
func LanePartition(stored int32) (lane int, p int32) {
	return int(stored / LaneStride), stored % LaneStride
}

// FormatPartition names a store partition for people: "7" for the
// default lane's partition 7, "20007 (lane 2, partition 7)" for a lane's.
func FormatPartition(stored int32) string {
	lane, p := LanePartition(stored)
	if lane == 0 {
		return fmt.Sprint(p)
	}
	return fmt.Sprintf("%d (lane %d, partition %d)", stored, lane, p)
}
