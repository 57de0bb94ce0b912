package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// TestPostgresFailoverLosesNothing: a center runs on a PostgreSQL primary
// with a synchronous streaming standby, its DSN listing both hosts with
// target_session_attrs=read-write. Mid-stream the primary crashes and the
// standby is promoted; the center carries on against it. Every committed
// message is forwarded, no rolled-back one is, and the store on the new
// primary has every message (synchronous replication: a commit the center
// saw is on the standby).
func TestPostgresFailoverLosesNothing(t *testing.T) {
	t.Parallel()
	primary := pgtest.Cluster(t)
	standby := primary.Standby(t, true)
	srv := newCountingCheckback(t)
	e := clusterEnv(t, srv)
	e.cfg.Store.DSN = pgtest.FailoverDSN(primary, standby)
	// A check-back answer whose write fails all through the failover is
	// asked again after the check-back lease; a short one bounds the wait.
	e.cfg.Checkback.Lease = 20 * time.Second
	col := e.collect(businessTopic)
	c := e.startCenter(center.Options{})
	waitOwnedBy(t, partitions, c)

	stop := make(chan struct{})
	s := e.startStream(t, "fo", srv, 4, stop)
	waitProduced := func(n int64) {
		require.Eventually(t, func() bool { return s.n.Load() >= n }, 2*time.Minute, 10*time.Millisecond)
	}
	waitProduced(400)
	crashed := time.Now()
	primary.Stop(t)
	standby.Promote(t)
	t.Logf("primary crashed at %s, standby promoted after %s", crashed.UTC().Format("15:04:05.000"), time.Since(crashed).Round(time.Millisecond))
	waitProduced(s.n.Load() + 400)
	close(stop)
	pl := s.wait(t)

	col.waitForEach(t, c.Store, pl.committed, 20*time.Second, 2*time.Minute,
		e.cfg.Checkback.Lease+e.cfg.Forward.Lease+30*time.Second, srv.callsOf)
	checkRolledBackInStore(t, c, pl.rolled)
	checkForwarded(t, col, pl)
}
