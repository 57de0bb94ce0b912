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
	faultFailover   = "postgres failover"
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
	pg      *pgSet
	broker  *broker
	adm     *kadm.Client
	truth   *truth
	grow    int // partitions to add, once
	growAt  time.Duration
	// pgLinks are the centers' links to PostgreSQL (by center index);
	// one is cut at cutAt for sure, others at random.
	pgLinks []linkSet
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
	// failoverAt is when the PostgreSQL primary fails over to its
	// standby, for sure, when there is one (pg has two nodes).
	failoverAt time.Duration
	// only, when set, limits the faults to these kinds (Config.faultKinds).
	only map[string]bool
	out  func(format string, args ...any)

	mu       sync.Mutex
	counts   map[string]int
	errs     []string
	unfenced []string
	episodes []episode
}

// episode is one fault, from its start to its heal (when the dependency
// it took away was back).
type episode struct {
	kind          string
	began, healed time.Time
}

// count counts a fault of kind name that began then and is healed now.
func (c *chaos) count(name string, began time.Time, err error) {
	c.countHealed(name, began, time.Now(), err)
}

func (c *chaos) countHealed(name string, began, healed time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[name]++
	if !began.IsZero() {
		c.episodes = append(c.episodes, episode{kind: name, began: began, healed: healed})
	}
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

// caseKinds name the kinds of the random faults by their case in run
// (link faults by their broadest name: any of their modes).
var caseKinds = []string{faultKill, faultStall, faultPGRestart, faultProduceErr, faultFetchErr, faultCBOutage, faultPGCut,
	"center-broker link", "center-check-back link", faultFailover}

// allowed tells whether faults of kind name may be injected (c.only
// limits them; link kinds match any of their modes).
func (c *chaos) allowed(name string) bool {
	if c.only == nil {
		return true
	}
	for k := range c.only {
		if strings.HasPrefix(name, k) || strings.HasPrefix(k, name) {
			return true
		}
	}
	return false
}

// once is a fault injected once, for sure, at a point of the run.
type once struct {
	at     time.Duration
	inject func(ctx context.Context)
}

// scheduled are the faults every run has once (those whose dependency
// the run has): each at its point of the run, in that order.
func (c *chaos) scheduled() []once {
	var s []once
	add := func(name string, ok bool, at time.Duration, inject func(ctx context.Context)) {
		if ok && c.allowed(name) {
			s = append(s, once{at: at, inject: inject})
		}
	}
	add(faultPGCut, len(c.pgLinks) > 0, c.cutAt, c.cutPG)
	add(linkFault("broker", "cut"), len(c.brokerLinks) > 0, c.brokerCutAt, func(ctx context.Context) { c.faultLink(ctx, "broker", c.brokerLinks, "cut") })
	add(faultPartitions, c.grow > 0, c.growAt, c.growPartitions)
	add(linkFault("check-back", "cut"), len(c.cbLinks) > 0, c.cbCutAt, func(ctx context.Context) { c.faultLink(ctx, "check-back", c.cbLinks, "cut") })
	add(faultIsolate, len(c.brokerLinks) > 0 && len(c.pgLinks) > 0, c.isolateAt, c.isolate)
	add(faultFailover, c.pg != nil && len(c.pg.nodes) > 1, c.failoverAt, c.failover)
	sort.SliceStable(s, func(i, j int) bool { return s[i].at < s[j].at })
	return s
}

// run injects faults one after another until ctx ends; every fault is
// undone before the next one starts and before run returns.
func (c *chaos) run(ctx context.Context) {
	start := time.Now()
	due := c.scheduled()
	for ctx.Err() == nil {
		sleep(ctx, c.between(c.every/2, c.every*3/2))
		if ctx.Err() != nil {
			return
		}
		// The fault's own waits are not cut short by ctx: it is undone first.
		undo := context.WithoutCancel(ctx)
		if len(due) > 0 && time.Since(start) >= due[0].at {
			due[0].inject(undo)
			due = due[1:]
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
		n := 6
		if len(c.pgLinks) > 0 {
			n = 7
		}
		if len(c.brokerLinks) > 0 && len(c.cbLinks) > 0 {
			n = 9
		}
		if c.pg != nil && len(c.pg.nodes) > 1 {
			n = 10
		}
		began := time.Now()
		pick := c.r.IntN(n)
		if c.only != nil {
			// Only the cases of the allowed kinds, drawn alike.
			var cases []int
			for i := range n {
				if c.allowed(caseKinds[i]) {
					cases = append(cases, i)
				}
			}
			if len(cases) == 0 {
				continue
			}
			pick = cases[c.r.IntN(len(cases))]
		}
		switch pick {
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
			c.count(faultKill, began, err)
		case 1:
			cp := c.centers[c.r.IntN(len(c.centers))]
			d := c.between(time.Second, 2*sessionTimeout)
			c.out("fault: SIGSTOP center %d for %s", cp.idx, d)
			err := cp.sigstop()
			sleep(undo, d)
			if cerr := cp.sigcont(); err == nil {
				err = cerr
			}
			c.count(faultStall, began, err)
		case 2:
			c.out("fault: PostgreSQL immediate restart")
			err := c.pg.restart(undo)
			c.count(faultPGRestart, began, err)
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
			c.count(name, began, err)
		case 5:
			d := c.between(time.Second, 8*time.Second)
			c.out("fault: check-back endpoint down for %s", d)
			c.truth.outage.Store(true)
			sleep(undo, d)
			c.truth.outage.Store(false)
			c.count(faultCBOutage, began, nil)
		case 6:
			c.cutPG(undo)
		case 7:
			c.faultLink(undo, "broker", c.brokerLinks, linkModes[c.r.IntN(len(linkModes))])
		case 8:
			c.faultLink(undo, "check-back", c.cbLinks, linkModes[c.r.IntN(len(linkModes))])
		case 9:
			c.failover(undo)
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
	began := time.Now()
	c.pgLinks[i].cut(dirs)
	sleep(ctx, d)
	c.pgLinks[i].heal()
	c.count(faultPGCut, began, nil)
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
	began := time.Now()
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
	c.count(linkFault(dep, mode), began, nil)
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
	c.countHealed(faultIsolate, began, healed, nil)
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
			c.count("group not stable after 90s", time.Time{}, fmt.Errorf("consumer group %s", state))
			return
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

func (c *chaos) growPartitions(ctx context.Context) {
	c.out("fault: control topic grows by %d partitions", c.grow)
	began := time.Now()
	resp, err := c.adm.CreatePartitions(ctx, c.grow, controlTopic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	c.count(faultPartitions, began, err)
}

// failover crashes the PostgreSQL primary and promotes its standby while
// the centers run (their DSN lists both nodes with
// target_session_attrs=read-write), then makes the old primary's node a
// standby of the new one, so that failovers can follow. The fault is
// healed when the new primary accepts writes.
func (c *chaos) failover(ctx context.Context) {
	began := time.Now()
	c.out("fault: PostgreSQL primary (port %d) crashed, standby promoted", c.pg.primaryNode().port)
	promoted, err := c.pg.failover(ctx)
	if promoted.IsZero() {
		promoted = time.Now()
	}
	c.out("fault: PostgreSQL port %d promoted after %s; new standby streaming after %s", c.pg.primaryNode().port,
		promoted.Sub(began).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	c.countHealed(faultFailover, began, promoted, err)
}

func (c *chaos) summary() (counts map[string]int, errs, unfenced []string, episodes []episode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	episodes = append(episodes, c.episodes...)
	counts = map[string]int{}
	for k, v := range c.counts {
		counts[k] = v
	}
	return counts, append([]string(nil), c.errs...), append([]string(nil), c.unfenced...), episodes
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
