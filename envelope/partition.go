package envelope

// PartitionFor returns the partition of a topic with partitions partitions
// that Kafka's default partitioner (the Java client's, franz-go's
// StickyKeyPartitioner for keyed records) gives a record key: murmur2 of
// the key, made positive, modulo the partition count. Producers put the
// control records of a message with an order key on
// PartitionFor(OrderRoutingKey(bizID, orderKey), n) (docs/ordering.md).
// It panics if partitions is not positive.
func PartitionFor(key string, partitions int) int32 {
	if partitions <= 0 {
		panic("envelope.PartitionFor: partitions must be positive")
	}
	return int32((murmur2([]byte(key)) & 0x7fffffff) % uint32(partitions))
}

// murmur2 is Kafka's murmur2 (org.apache.kafka.common.utils.Utils).
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := n &^ 3
	switch n % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
