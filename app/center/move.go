package center

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/sharded"
)

// MoveReport says what MoveBuckets did and the store.shards bucket lists
// to configure before the center starts again.
type MoveReport struct {
	sharded.MoveResult
	// Buckets is the new bucket list of each shard, in store.shards order.
	Buckets []string
}

// MoveBuckets moves buckets (ParseBuckets syntax) from shard from to shard
// to of the sharded store configured in cfg (see sharded.MoveBuckets).
// The buckets must belong to from in cfg. Every instance of the center
// must be stopped; afterwards set store.shards[i].buckets to the report's
// Buckets and start them.
// progress, when not nil, hears how far the copy is.
func MoveBuckets(ctx context.Context, cfg config.Store, from, to int, buckets string, log *slog.Logger, progress sharded.Progress) (MoveReport, error) {
	if cfg.Driver != "sharded" {
		return MoveReport{}, fmt.Errorf("store.driver is %q: moving buckets needs sharded", cfg.Driver)
	}
	n := len(cfg.Shards)
	if from < 0 || from >= n || to < 0 || to >= n || from == to {
		return MoveReport{}, fmt.Errorf("want two different shards of 0-%d, got %d and %d", n-1, from, to)
	}
	moving, err := sharded.ParseBuckets(buckets)
	if err != nil || len(moving) == 0 {
		return MoveReport{}, fmt.Errorf("buckets: want a list such as 512-1023, got %q", buckets)
	}
	specs := make([]string, n)
	for i, sh := range cfg.Shards {
		specs[i] = sh.Buckets
	}
	m, err := sharded.NewMap(specs)
	if err != nil {
		return MoveReport{}, fmt.Errorf("store.shards: %w", err)
	}
	for _, b := range moving {
		if m[b] != from {
			return MoveReport{}, fmt.Errorf("bucket %d is on shard %d, not %d (store.shards is the map in use)", b, m[b], from)
		}
		m[b] = to
	}
	src, err := NewPool(ctx, shardStore(cfg, from))
	if err != nil {
		return MoveReport{}, fmt.Errorf("store.shards[%d]: %w", from, err)
	}
	defer src.Close()
	dst, err := NewPool(ctx, shardStore(cfg, to))
	if err != nil {
		return MoveReport{}, fmt.Errorf("store.shards[%d]: %w", to, err)
	}
	defer dst.Close()
	if err := postgres.CheckSchema(ctx, src); err != nil {
		return MoveReport{}, fmt.Errorf("store.shards[%d]: %w", from, err)
	}
	if err := postgres.CheckSchema(ctx, dst); err != nil {
		return MoveReport{}, fmt.Errorf("store.shards[%d]: %w (run \"eventcenter migrate\")", to, err)
	}
	res, err := sharded.MoveBucketsWith(ctx, src, dst, moving, progress)
	if err != nil {
		return MoveReport{}, err
	}
	log.Info("moved buckets", "from", from, "to", to, "buckets", buckets, "messages", res.Messages, "audit", res.Audit)
	rep := MoveReport{MoveResult: res, Buckets: make([]string, n)}
	per := make([][]int, n)
	for b, s := range m {
		per[s] = append(per[s], b)
	}
	for i := range per {
		rep.Buckets[i] = sharded.FormatBuckets(per[i])
	}
	return rep, nil
}
