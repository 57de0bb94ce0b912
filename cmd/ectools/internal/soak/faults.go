package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Fault names, as counted in the report.
const (
	faultKill       = "center SIGKILL+restart"
	faultStall      = "center SIGSTOP/SIGCONT"
	faultPGRestart  = "postgres restart"
	faultProduceErr = "broker produce errors"
	faultFetchErr   = "broker fetch errors"
	faultCBOutage   = "check-back outage"
	faultPartitions = "partition increase"
	faultPGCut      = "center-postgres link cut"
)

// chaos injects faults from one seeded source.
type chaos struct {
	r       *rand.Rand
	every   time.Duration
	centers []*centerProc
	pg      *pgCluster
	broker  *broker
	adm     *kadm.Client
	truth   *truth
	grow    int // partitions to add, once
	growAt  time.Duration
	// pgLinks are the centers' links to PostgreSQL (by center index);
	// one is cut at cutAt for sure, others at random.
	pgLinks []*netProxy
	cutAt   time.Duration
	out     func(format string, args ...any)

	mu     sync.Mutex
	counts map[string]int
	errs   []string
}

func (c *chaos) count(name string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[name]++
	if err != nil {
		c.errs = append(c.errs, fmt.Sprintf("%s: %v", name, err))
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *chaos) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.r.Int64N(int64(hi-lo)+1))
}

// run injects faults one after another until ctx ends; every fault is
// undone before the next one starts and before run returns.
func (c *chaos) run(ctx context.Context) {
	start := time.Now()
	grown := c.grow == 0
	cut := len(c.pgLinks) == 0
	for ctx.Err() == nil {
		sleep(ctx, c.between(c.every/2, c.every*3/2))
		if ctx.Err() != nil {
			return
		}
		if !grown && time.Since(start) >= c.growAt {
			grown = true
			c.growPartitions(ctx)
			continue
		}
		if !cut && time.Since(start) >= c.cutAt {
			cut = true
			c.cutPG(context.WithoutCancel(ctx))
			continue
		}
		// One membership change at a time: kfake's group coordinator
		// restarts its rebalance deadline on every join, so a member that
		// dies in the middle of a rebalance can keep the group rebalancing
		// for good (see docs/cluster.md); faults start on a stable group.
		c.waitStable(ctx)
		if ctx.Err() != nil {
			return
		}
		// The fault's own waits are not cut short by ctx: it is undone first.
		undo := context.WithoutCancel(ctx)
		n := 6
		if len(c.pgLinks) > 0 {
			n = 7
		}
		switch c.r.IntN(n) {
		case 0:
			cp := c.centers[c.r.IntN(len(c.centers))]
			// Restarted after the session timeout, so the group drops the
			// dead member before the new one joins (see waitStable).
			down := sessionTimeout + c.between(500*time.Millisecond, 3*time.Second)
			c.out("fault: SIGKILL center %d, restart after %s", cp.idx, down)
			if n, err := cp.scrapeSent(undo); err == nil {
				cp.sentBefore += n // the counter dies with the process
			}
			err := cp.kill()
			sleep(undo, down)
			if serr := cp.start(); err == nil {
				err = serr
			}
			c.count(faultKill, err)
		case 1:
			cp := c.centers[c.r.IntN(len(c.centers))]
			d := c.between(time.Second, 2*sessionTimeout)
			c.out("fault: SIGSTOP center %d for %s", cp.idx, d)
			err := cp.sigstop()
			sleep(undo, d)
			if cerr := cp.sigcont(); err == nil {
				err = cerr
			}
			c.count(faultStall, err)
		case 2:
			c.out("fault: PostgreSQL immediate restart")
			c.count(faultPGRestart, c.pg.restart(undo))
		case 3, 4:
			name, key := faultProduceErr, "produce"
			if c.r.IntN(2) == 0 {
				name, key = faultFetchErr, "fetch"
			}
			rate := []float64{0.3, 0.7, 1}[c.r.IntN(3)]
			d := c.between(time.Second, 6*time.Second)
			c.out("fault: broker %s errors at rate %g for %s", key, rate, d)
			err := c.broker.setFault(undo, key, rate)
			sleep(undo, d)
			if uerr := c.broker.setFault(undo, key, 0); err == nil {
				err = uerr
			}
			c.count(name, err)
		case 5:
			d := c.between(time.Second, 8*time.Second)
			c.out("fault: check-back endpoint down for %s", d)
			c.truth.outage.Store(true)
			sleep(undo, d)
			c.truth.outage.Store(false)
			c.count(faultCBOutage, nil)
		case 6:
			c.cutPG(undo)
		}
	}
}

// cutPG cuts one center's link to PostgreSQL, one way or both, for up to
// twice the send lease (past it, other centers may claim what it leased),
// then heals it.
func (c *chaos) cutPG(ctx context.Context) {
	i := c.r.IntN(len(c.pgLinks))
	dirs := []int{bothWays, toDependency, toCenter}[c.r.IntN(3)]
	how := map[int]string{bothWays: "both ways", toDependency: "center to postgres", toCenter: "postgres to center"}[dirs]
	d := c.between(2*time.Second, 2*sendLease)
	c.out("fault: center %d's link to PostgreSQL cut (%s) for %s", i, how, d)
	c.pgLinks[i].cut(dirs)
	sleep(ctx, d)
	c.pgLinks[i].heal()
	c.count(faultPGCut, nil)
}

// waitStable waits until the consumer group is Stable (up to 90s; a group
// that does not settle is reported as a fault error).
func (c *chaos) waitStable(ctx context.Context) {
	deadline := time.Now().Add(90 * time.Second)
	for ctx.Err() == nil {
		gs, err := c.adm.DescribeGroups(ctx, groupName)
		if err == nil && gs[groupName].State == "Stable" {
			return
		}
		if time.Now().After(deadline) {
			state := "unknown"
			if err == nil {
				state = gs[groupName].State
			}
			c.count("group not stable after 90s", fmt.Errorf("consumer group %s", state))
			return
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

func (c *chaos) growPartitions(ctx context.Context) {
	c.out("fault: control topic grows by %d partitions", c.grow)
	resp, err := c.adm.CreatePartitions(ctx, c.grow, controlTopic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	c.count(faultPartitions, err)
}

func (c *chaos) summary() (map[string]int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[string]int{}
	for k, v := range c.counts {
		counts[k] = v
	}
	return counts, append([]string(nil), c.errs...)
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-26s %d\n", k, m[k])
	}
	return b.String()
}
