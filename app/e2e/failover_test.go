package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
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

// TestPostgresAsyncFailoverMeasured: as TestPostgresFailoverLosesNothing,
// with an asynchronous standby, and the primary crashed while the stream
// runs at full speed. It measures what the failover cost, and logs it:
// the transactions not yet replicated when the primary died are gone, and
// the center had committed the control offsets behind them, so nothing
// brings them back by itself. A committed message is then lost if its row
// is missing, or its COMMIT is (its check-back parks it VERIFY_FAILED),
// unless it was sent before the crash. What holds even so, it requires:
// no rolled-back message is forwarded, no message is forwarded that was
// never committed, and every committed message is forwarded or lost in
// one of those two ways.
func TestPostgresAsyncFailoverMeasured(t *testing.T) {
	t.Parallel()
	primary := pgtest.Cluster(t)
	standby := primary.Standby(t, false)
	srv := newCountingCheckback(t)
	e := clusterEnv(t, srv)
	e.cfg.Store.DSN = pgtest.FailoverDSN(primary, standby)
	e.cfg.Checkback.Lease = 20 * time.Second
	col := e.collect(businessTopic)
	c := e.startCenter(center.Options{})
	waitOwnedBy(t, partitions, c)

	stop := make(chan struct{})
	s := e.startStream(t, "afo", srv, 8, stop)
	require.Eventually(t, func() bool { return s.n.Load() >= 600 }, 2*time.Minute, 10*time.Millisecond)
	atCrash := s.n.Load()
	primary.Stop(t)
	standby.Promote(t)
	require.Eventually(t, func() bool { return s.n.Load() >= atCrash+400 }, 2*time.Minute, 10*time.Millisecond)
	close(stop)
	pl := s.wait(t)

	// Settle: every committed message is forwarded, or lost: its row is
	// missing on the new primary, or its COMMIT is, so that its check-back
	// (these PREPAREs name no endpoint) parked it VERIFY_FAILED.
	row := func(id string) (state.Message, bool) {
		biz, key, _ := envelope.SplitKey(id)
		m, err := c.Store.Get(t.Context(), biz, key)
		if errors.Is(err, store.ErrNotFound) {
			return m, false
		}
		require.NoError(t, err)
		return m, true
	}
	var missing, parked []string
	require.Eventually(t, func() bool {
		missing, parked = missing[:0], parked[:0]
		for _, id := range pl.committed {
			if len(col.get(id)) > 0 {
				continue
			}
			switch m, ok := row(id); {
			case !ok:
				missing = append(missing, id)
			case m.Status == state.VerifyFailed:
				parked = append(parked, id)
			default:
				return false
			}
		}
		return true
	}, e.cfg.Checkback.Lease+e.cfg.Forward.Lease+2*time.Minute, 100*time.Millisecond,
		"committed messages neither forwarded nor lost")
	// Forwarded, but the new primary forgot the decision: the row is not
	// COMMITTED (sent before the crash; the COMMIT and the sent mark were
	// not replicated).
	forgot := 0
	for _, id := range pl.committed {
		if m, ok := row(id); len(col.get(id)) > 0 && (!ok || m.Status != state.Committed) {
			forgot++
		}
	}
	rolledParked := 0
	for _, id := range pl.rolled {
		if m, ok := row(id); ok && m.Status == state.VerifyFailed {
			rolledParked++
		}
	}
	for _, id := range pl.rolled {
		require.Empty(t, col.get(id), "rolled-back %s was forwarded", id)
	}
	ids, records := col.count()
	require.LessOrEqual(t, ids, len(pl.committed), "forwarded ids that were never committed")
	t.Logf("asynchronous failover: %d messages before the crash, %d in all (%d committed, %d rolled back); "+
		"committed and never forwarded: %d whose row is missing on the new primary %v, %d parked VERIFY_FAILED (their COMMIT missing) %v; "+
		"%d forwarded whose row is no longer COMMITTED; %d rolled back parked VERIFY_FAILED; %d records forwarded for %d ids (%d duplicates)",
		atCrash, s.n.Load(), len(pl.committed), len(pl.rolled), len(missing), missing, len(parked), parked,
		forgot, rolledParked, records, ids, records-ids)
}
