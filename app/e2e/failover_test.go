package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// failoverEnv is a center on a PostgreSQL primary with a streaming
// standby (synchronous with o.Sync, lagging by o.Lag), its DSN listing
// both hosts, the standby first, with target_session_attrs=read-write,
// consuming every partition, with a collector on the business topic.
type failoverEnv struct {
	*env
	primary, standby *pgtest.Server
	srv              *countingCheckback
	col              *collector
	c                *center.Center
	stopCenter       func()
	crashed          time.Time
}

func newFailoverEnv(t *testing.T, o pgtest.StandbyOptions) *failoverEnv {
	t.Helper()
	f := &failoverEnv{primary: pgtest.Cluster(t), srv: newCountingCheckback(t)}
	f.standby = f.primary.StandbyWith(t, o)
	f.env = clusterEnv(t, f.srv)
	// The standby first: only target_session_attrs=read-write keeps the
	// center off it (and, after the failover, off the old primary).
	f.cfg.Store.DSN = pgtest.FailoverDSN(f.standby, f.primary)
	// A check-back answer whose write fails all through the failover is
	// asked again after the check-back lease; a short one bounds the wait.
	f.cfg.Checkback.Lease = 20 * time.Second
	f.col = f.collect(businessTopic)
	f.c, f.stopCenter = f.startStoppableCenter()
	waitOwnedBy(t, partitions, f.c)
	// The schema the center made is on the standby before anything fails.
	f.primary.WaitReplayed(t)
	return f
}

// failOver crashes the primary (dropping first what a lagging replication
// link holds) and promotes the standby.
func (f *failoverEnv) failOver(t *testing.T, lagging bool) time.Time {
	t.Helper()
	crashed := time.Now()
	if lagging {
		f.standby.DropReplication(t)
	}
	f.primary.Stop(t)
	f.standby.Promote(t)
	t.Logf("primary crashed at %s, standby promoted after %s", crashed.UTC().Format("15:04:05.000"), time.Since(crashed).Round(time.Millisecond))
	return crashed
}

// TestPostgresFailoverLosesNothing: mid-stream the primary crashes and its
// synchronous standby is promoted; the center carries on against it. The
// standby lags (its replication link delays WAL by 500 ms) and the link's
// WAL is dropped at the crash, so whatever the primary committed without
// the standby having it is gone: only synchronous replication keeps every
// message. Every committed message is forwarded, no rolled-back one is.
// The DSN lists the standby first, so it also fails without
// target_session_attrs=read-write (the center would migrate and write on
// the standby).
func TestPostgresFailoverLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFailoverEnv(t, pgtest.StandbyOptions{Sync: true, Lag: 500 * time.Millisecond})
	stop := make(chan struct{})
	s := f.startStream(t, "fo", f.srv, 4, stop)
	waitProduced := func(n int64) {
		require.Eventually(t, func() bool { return s.n.Load() >= n }, 2*time.Minute, 10*time.Millisecond)
	}
	waitProduced(400)
	f.failOver(t, true)
	waitProduced(s.n.Load() + 400)
	close(stop)
	pl := s.wait(t)

	f.col.waitForEach(t, f.c.Store, pl.committed, 20*time.Second, 2*time.Minute,
		f.cfg.Checkback.Lease+f.cfg.Forward.Lease+30*time.Second, f.srv.callsOf)
	checkRolledBackInStore(t, f.c, pl.rolled)
	checkForwarded(t, f.col, pl)
}

// asyncLoss is what an asynchronous failover cost: committed messages
// never forwarded whose row is missing on the new primary, or whose COMMIT
// is (the check-back parked them VERIFY_FAILED: these PREPAREs name no
// endpoint), or whose PREPARE is while their COMMIT came after the
// failover (an orphan commit: COMMITTED without a body), and forwarded
// ones whose row is no longer COMMITTED there.
type asyncLoss struct {
	missing, parked, orphaned []string
	forgot                    int
}

// TestPostgresAsyncFailoverMeasured: as TestPostgresFailoverLosesNothing,
// with an asynchronous standby on loopback (no added lag), the primary
// crashed while the stream runs at full speed. It measures what the
// failover cost and logs it. What holds even so, it requires: no
// rolled-back message is forwarded, no message is forwarded that was
// never committed, and every committed message is forwarded or lost.
func TestPostgresAsyncFailoverMeasured(t *testing.T) {
	t.Parallel()
	f := newFailoverEnv(t, pgtest.StandbyOptions{})
	pl, loss := f.asyncFailover(t, false)
	t.Logf("asynchronous failover on loopback: %d committed, %d rolled back; lost: %d rows missing %v, %d parked %v, %d orphan commits %v; %d forwarded whose row is no longer COMMITTED",
		len(pl.committed), len(pl.rolled), len(loss.missing), loss.missing, len(loss.parked), loss.parked, len(loss.orphaned), loss.orphaned, loss.forgot)
}

// TestPostgresLaggingStandbyFailoverRecovered: an asynchronous standby
// lagging 2 s (its replication link delays WAL that long, and drops what
// it holds at the crash) is promoted under load. What was committed on the
// primary in its last 2 s is gone, and the center had committed the
// control offsets behind it: those messages are lost (logged: the
// figure). Then the operator's recovery of docs/operations.md: stop the
// center, reset the group's control offsets to before the crash by more
// than the lag, start it again. It requires that this brings every lost
// message back, and that no rolled-back message is ever forwarded.
func TestPostgresLaggingStandbyFailoverRecovered(t *testing.T) {
	t.Parallel()
	const lag = 2 * time.Second
	f := newFailoverEnv(t, pgtest.StandbyOptions{Lag: lag})
	pl, loss := f.asyncFailover(t, true)
	ids, records := f.col.count()
	t.Logf("standby lagging %s, failover: %d committed, %d rolled back; lost: %d rows missing, %d parked VERIFY_FAILED (their COMMIT missing), "+
		"%d orphan commits (their PREPARE missing); %d forwarded whose row is no longer COMMITTED; %d records for %d ids",
		lag, len(pl.committed), len(pl.rolled), len(loss.missing), len(loss.parked), len(loss.orphaned), loss.forgot, records, ids)

	// Recovery: with the center stopped (the group empty), rewind the
	// group to the first control offsets at or after crash - lag - 3 s.
	f.stopCenter()
	adm := kadm.NewClient(f.raw())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	from := f.crashed.Add(-lag - 3*time.Second)
	listed, err := adm.ListOffsetsAfterMilli(ctx, from.UnixMilli(), controlTopic)
	require.NoError(t, err)
	require.NoError(t, listed.Error())
	committed, err := adm.CommitOffsets(ctx, f.cfg.Kafka.Group, listed.Offsets())
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	c := f.startCenter(center.Options{})
	waitOwnedBy(t, partitions, c)
	f.col.waitFor(t, pl.committed, 2*time.Minute)
	checkForwarded(t, f.col, pl)
	after, recordsAfter := f.col.count()
	t.Logf("after rewinding the group to %s (crash - lag - 3 s): every committed message forwarded; %d records for %d ids (%d sent again by the replay)",
		from.UTC().Format("15:04:05.000"), recordsAfter, after, recordsAfter-records)
}

// asyncFailover streams with 8 producers, crashes the primary after 600
// messages, promotes the standby, streams 400 more and waits until every
// committed message is forwarded or lost. It requires that no rolled-back
// message is forwarded and nothing is forwarded that was never committed.
func (f *failoverEnv) asyncFailover(t *testing.T, lagging bool) (plan, asyncLoss) {
	t.Helper()
	stop := make(chan struct{})
	s := f.startStream(t, "afo", f.srv, 8, stop)
	// The center is busy when the primary crashes: 600 produced, 300 forwarded.
	require.Eventually(t, func() bool {
		ids, _ := f.col.count()
		return s.n.Load() >= 600 && ids >= 300
	}, 2*time.Minute, 10*time.Millisecond)
	atCrash := s.n.Load()
	f.crashed = f.failOver(t, lagging)
	require.Eventually(t, func() bool { return s.n.Load() >= atCrash+400 }, 2*time.Minute, 10*time.Millisecond)
	close(stop)
	pl := s.wait(t)

	row := func(id string) (state.Message, bool) {
		biz, key, _ := envelope.SplitKey(id)
		m, err := f.c.Store.Get(t.Context(), biz, key)
		if errors.Is(err, store.ErrNotFound) {
			return m, false
		}
		require.NoError(t, err)
		return m, true
	}
	// Settle: the center has read the control topic to its end (a row is
	// missing for good, not yet to come), and every committed message is
	// forwarded or lost.
	adm := kadm.NewClient(f.raw())
	require.Eventually(t, func() bool {
		lags, err := adm.Lag(t.Context(), f.cfg.Kafka.Group)
		if err != nil || lags.Error() != nil {
			return false
		}
		total := int64(0)
		for _, l := range lags.Sorted() {
			total += l.Lag.Total()
		}
		return total == 0
	}, 2*time.Minute, 100*time.Millisecond, "the center did not read the control topic to its end")
	var loss asyncLoss
	deadline := time.Now().Add(f.cfg.Checkback.Lease + f.cfg.Forward.Lease + 2*time.Minute)
	for {
		var pending []string
		loss.missing, loss.parked, loss.orphaned = loss.missing[:0], loss.parked[:0], loss.orphaned[:0]
		for _, id := range pl.committed {
			if len(f.col.get(id)) > 0 {
				continue
			}
			switch m, ok := row(id); {
			case !ok:
				loss.missing = append(loss.missing, id)
			case m.Status == state.VerifyFailed:
				loss.parked = append(loss.parked, id)
			case m.Status == state.Committed && !m.HasBody:
				// Its PREPARE's row was lost while the control offset
				// behind the PREPARE was committed; its COMMIT, read
				// after the failover, made an orphan commit waiting for
				// a PREPARE that is not read again.
				loss.orphaned = append(loss.orphaned, id)
			default:
				pending = append(pending, fmt.Sprintf("%s (%v, send %v, body %v, partition %d, lease token %d, %d check-backs, %d sends, next send %s)",
					id, m.Status, m.SendStatus, m.HasBody, m.Partition, m.LeaseToken, m.VerifyAttempts, m.SendAttempts, m.SendNextAt.UTC().Format("15:04:05.000")))
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d committed messages neither forwarded nor lost at %s, e.g. %v", len(pending),
				time.Now().UTC().Format("15:04:05.000"), pending[:min(len(pending), 10)])
		}
		time.Sleep(100 * time.Millisecond) // polling the store and the collector
	}
	for _, id := range pl.committed {
		if m, ok := row(id); len(f.col.get(id)) > 0 && (!ok || m.Status != state.Committed) {
			loss.forgot++
		}
	}
	for _, id := range pl.rolled {
		require.Empty(t, f.col.get(id), "rolled-back %s was forwarded", id)
	}
	ids, _ := f.col.count()
	require.LessOrEqual(t, ids, len(pl.committed), "forwarded ids that were never committed")
	return pl, loss
}
