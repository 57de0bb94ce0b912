package sharded

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// Buckets is the fixed number of virtual buckets keys hash into.
const Buckets = 1024

// MaxShards bounds the number of shards (the shard travels in the low 8
// bits of the IDs this store hands out).
const MaxShards = 256

// Bucket returns the virtual bucket of a message key: FNV-1a (32 bits) of
// "bizID:key" modulo Buckets. It never changes for a key.
func Bucket(bizID, key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(bizID))
	_, _ = h.Write([]byte{':'})
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % Buckets)
}

// ParseBuckets reads a bucket list such as "0-511" or "0-99,200,300-399";
// "" is no bucket (a shard being filled by MoveBuckets, say).
func ParseBuckets(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("buckets %q: empty range", s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("buckets %q: bad bucket %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("buckets %q: bad bucket %q", s, hi)
			}
		}
		if a < 0 || b >= Buckets || a > b {
			return nil, fmt.Errorf("buckets %q: range %q outside 0-%d or reversed", s, part, Buckets-1)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// Map is the bucket → shard map: Map[b] is the shard index of bucket b.
type Map [Buckets]int

// NewMap builds the map from each shard's bucket list (ParseBuckets
// syntax) and checks that every bucket is mapped exactly once.
func NewMap(shardBuckets []string) (*Map, error) {
	if len(shardBuckets) == 0 || len(shardBuckets) > MaxShards {
		return nil, fmt.Errorf("want 1 to %d shards, got %d", MaxShards, len(shardBuckets))
	}
	var m Map
	for i := range m {
		m[i] = -1
	}
	for s, spec := range shardBuckets {
		bs, err := ParseBuckets(spec)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", s, err)
		}
		for _, b := range bs {
			if m[b] >= 0 {
				return nil, fmt.Errorf("shard %d: bucket %d is already mapped to shard %d", s, b, m[b])
			}
			m[b] = s
		}
	}
	for b, s := range m {
		if s < 0 {
			return nil, fmt.Errorf("bucket %d is not mapped to any shard (every bucket 0-%d must be mapped once)", b, Buckets-1)
		}
	}
	return &m, nil
}

// Shard returns the shard index of a message key.
func (m *Map) Shard(bizID, key string) int { return m[Bucket(bizID, key)] }

// Even returns bucket lists splitting the buckets into n equal ranges.
func Even(n int) []string {
	out := make([]string, n)
	for i := range n {
		lo, hi := i*Buckets/n, (i+1)*Buckets/n-1
		out[i] = fmt.Sprintf("%d-%d", lo, hi)
	}
	return out
}

// FormatBuckets writes buckets as ParseBuckets reads them ("0-511,600").
func FormatBuckets(buckets []int) string {
	bs := slices.Sorted(slices.Values(buckets))
	bs = slices.Compact(bs)
	var parts []string
	for i := 0; i < len(bs); {
		j := i
		for j+1 < len(bs) && bs[j+1] == bs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(bs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", bs[i], bs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
