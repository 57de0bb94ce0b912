package main

import (
	"github.com/spf13/pflag"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/bench"
)

// noisyFlags are the noisy-neighbour run's flags (docs/performance.md).
func noisyFlags(f *pflag.FlagSet, n *bench.Noisy, noFreshWait *bool) {
	f.IntVar(&n.FloodMessages, "flood-messages", 0, "noisy-neighbour run: bizID \"flood\" sends this many messages as fast as it can, alone and then while bizID \"quiet\" sends --quiet-rate; the report compares quiet's commit-to-forward p99 during the flood with alone, flood's throughput with and without quiet, and gives quiet's place in line (flood messages forwarded between a quiet message's commit and its forward) (0: off)")
	f.Float64Var(&n.QuietRate, "quiet-rate", n.QuietRate, "noisy-neighbour run: bizID \"quiet\"'s messages per second")
	f.DurationVar(&n.QuietAlone, "quiet-alone", n.QuietAlone, "noisy-neighbour run: how long \"quiet\" runs alone first")
	f.IntVar(&n.QuietConcurrency, "quiet-concurrency", n.QuietConcurrency, "noisy-neighbour run: goroutines sending \"quiet\"'s messages")
	f.BoolVar(&n.FairClaims, "fair-claims", n.FairClaims, "embedded center: forward.fair_claims (false: the oldest due first, whatever the bizID)")
	f.Float64Var(&n.FloodRate, "flood-rate", 0, "noisy-neighbour run: forward.biz rate limit of \"flood\" (0: none)")
	f.IntVar(&n.FloodMaxInFlight, "flood-max-in-flight", 0, "noisy-neighbour run: forward.biz max_in_flight of \"flood\" (0: none)")
	f.BoolVar(&n.QuietLane, "quiet-lane", false, "noisy-neighbour run: put \"quiet\" on a control lane of its own (kafka.lanes: topic <control topic>.lane.quiet), consumed apart from the flood")
	f.DurationVar(&n.QuietLaneFreshFetchWait, "quiet-lane-fresh-fetch-wait", 0, "noisy-neighbour run with --quiet-lane: the lane's fresh_fetch_wait (0: ingest.fresh_fetch_wait)")
	f.BoolVar(noFreshWait, "quiet-lane-no-fresh-fetch-wait", false, "noisy-neighbour run with --quiet-lane: the lane's polls never wait for a fresh fetch (fresh_fetch_wait negative)")
}
