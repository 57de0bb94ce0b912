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
	faultIsolate    = "center-postgres+broker cut"
)

// linkFault is the name of a fault of one center's link to a dependency
// ("broker", "check-back") of one mode (linkModes), as counted.
func linkFault(dep, mode string) string { return "center-" + dep + " link " + mode }

// Modes of a link fault: held (cut), delayed, lossy (stalls as after lost
// segments) or flapping (cut and healed in turns of 0.2-2 s).
var linkModes = []string{"cut", "delay", "loss", "flap"}

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
	// brokerLinks and cbLinks are the centers' links to the broker and to
	// the check-back endpoint; each is cut once for sure (at brokerCutAt,
	// cbCutAt), and faulted in any mode at random.
	brokerLinks          []*netProxy
	cbLinks              []*netProxy
	brokerCutAt, cbCutAt time.Duration
	// isolateAt is when one center is cut from PostgreSQL and the broker
	// at once, past its send lease and its group session, for sure.
	isolateAt time.Duration
	out       func(format string, args ...any)

	mu       sync.Mutex
	counts   map[string]int
	errs     []string
	unfenced []string
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
	brokerCut, cbCut := len(c.brokerLinks) == 0, len(c.cbLinks) == 0
	isolated := len(c.brokerLinks) == 0 || len(c.pgLinks) == 0
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
		if !brokerCut && time.Since(start) >= c.brokerCutAt {
			brokerCut = true
			c.faultLink(context.WithoutCancel(ctx), "broker", c.brokerLinks, "cut")
			continue
		}
		if !isolated && time.Since(start) >= c.isolateAt {
			isolated = true
			c.isolate(context.WithoutCancel(ctx))
			continue
		}
		if !cbCut && time.Since(start) >= c.cbCutAt {
			cbCut = true
			c.faultLink(context.WithoutCancel(ctx), "check-back", c.cbLinks, "cut")
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
		if len(c.brokerLinks) > 0 && len(c.cbLinks) > 0 {
			n = 9
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
		case 7:
			c.faultLink(undo, "broker", c.brokerLinks, linkModes[c.r.IntN(len(linkModes))])
		case 8:
			c.faultLink(undo, "check-back", c.cbLinks, linkModes[c.r.IntN(len(linkModes))])
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

// faultLink faults one center's link to dep in the given mode, one way or
// both, for 2 s to twice the session timeout (a broker link held that long
// costs the center its partitions), then heals it.
func (c *chaos) faultLink(ctx context.Context, dep string, links []*netProxy, mode string) {
	i := c.r.IntN(len(links))
	dirs := []int{bothWays, toDependency, toCenter}[c.r.IntN(3)]
	how := map[int]string{bothWays: "both ways", toDependency: "center to " + dep, toCenter: dep + " to center"}[dirs]
	d := c.between(2*time.Second, 2*sessionTimeout)
	p := links[i]
	switch mode {
	case "cut":
		c.out("fault: center %d's link to the %s cut (%s) for %s", i, dep, how, d)
		p.cut(dirs)
		sleep(ctx, d)
	case "delay":
		delay := c.between(50*time.Millisecond, 500*time.Millisecond)
		c.out("fault: center %d's link to the %s delayed %s (%s) for %s", i, dep, delay, how, d)
		p.degrade(dirs, delay, 0)
		sleep(ctx, d)
	case "loss":
		loss := []float64{0.05, 0.2, 0.5}[c.r.IntN(3)]
		c.out("fault: center %d's link to the %s loses %g of its segments (%s) for %s", i, dep, loss, how, d)
		p.degrade(dirs, 0, loss)
		sleep(ctx, d)
	case "flap":
		c.out("fault: center %d's link to the %s flaps (%s) for %s", i, dep, how, d)
		for end := time.Now().Add(d); time.Now().Before(end); {
			p.cut(dirs)
			sleep(ctx, c.between(200*time.Millisecond, 2*time.Second))
			p.heal()
			sleep(ctx, c.between(200*time.Millisecond, 2*time.Second))
		}
	}
	p.heal()
	c.count(linkFault(dep, mode), nil)
}

// isolate cuts one center from PostgreSQL and the broker, both ways, past
// its send lease and its group session (its partitions go to the others,
// which claim what it leased once the lease ran out), then heals it. The
// fencing it checks: a center cut off sends nothing once its leases ran
// out, so from the cut's start plus the send lease plus the send timeout
// (a send handed to the client before the lease ended is given up by then)
// until the heal, not one Produce request leaves it. The proxy reads on
// while cut, so a request counts when the center wrote it.
func (c *chaos) isolate(ctx context.Context) {
	i := c.r.IntN(len(c.brokerLinks))
	d := c.between(2*sessionTimeout, 2*sessionTimeout+sendLease)
	c.out("fault: center %d cut from PostgreSQL and the broker (both ways) for %s", i, d)
	began := time.Now()
	c.pgLinks[i].cut(bothWays)
	c.brokerLinks[i].cut(bothWays)
	sleep(ctx, d)
	healed := time.Now()
	fenced := began.Add(sendLease + sendTimeout + time.Second)
	n := c.brokerLinks[i].kafka.producedBetween(fenced, healed)
	c.brokerLinks[i].heal()
	c.pgLinks[i].heal()
	if n > 0 {
		c.mu.Lock()
		c.unfenced = append(c.unfenced, fmt.Sprintf("center %d wrote %d Produce requests while cut off, from %s after the cut (its leases had run out) to the heal",
			i, n, fenced.Sub(began).Round(time.Millisecond)))
		c.mu.Unlock()
	}
	c.out("fault: center %d healed; Produce requests it wrote from %s after the cut to the heal: %d",
		i, fenced.Sub(began).Round(time.Millisecond), n)
	c.count(faultIsolate, nil)
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

func (c *chaos) summary() (counts map[string]int, errs, unfenced []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts = map[string]int{}
	for k, v := range c.counts {
		counts[k] = v
	}
	return counts, append([]string(nil), c.errs...), append([]string(nil), c.unfenced...)
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
