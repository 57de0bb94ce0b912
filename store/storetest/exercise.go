package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// NewStore returns a fresh, empty, migrated store that reads time from now.
// It registers its own cleanup with t.
type NewStore func(t *testing.T, now func() time.Time) store.Store

// lease is the send lease the suite asks Apply for.
const lease = 30 * time.Second

// bundle is what each test of the suite starts from.
type bundle struct {
	s     store.Store
	clock *Clock
}

func setup(t *testing.T, newStore NewStore) *bundle {
	t.Helper()
	c := NewClock()
	return &bundle{s: newStore(t, c.Now), clock: c}
}

func (b *bundle) apply(t *testing.T, changes ...store.Change) store.ApplyResult {
	t.Helper()
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease})
	require.NoError(t, err)
	require.Len(t, res.Outcomes, len(changes))
	return res
}

func (b *bundle) get(t *testing.T, biz, key string) state.Message {
	t.Helper()
	m, err := b.s.Get(t.Context(), biz, key)
	require.NoError(t, err)
	return m
}

func (b *bundle) now() time.Time { return b.clock.Now() }

// Exercise runs the conformance suite against the store newStore makes.
func Exercise(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("Transitions", func(t *testing.T) { t.Parallel(); testTransitions(t, newStore) })
	t.Run("BodyRoundTrip", func(t *testing.T) { t.Parallel(); testBodyRoundTrip(t, newStore) })
	t.Run("GetNotFound", func(t *testing.T) { t.Parallel(); testGetNotFound(t, newStore) })
	t.Run("ReplayIsNoOp", func(t *testing.T) { t.Parallel(); testReplay(t, newStore) })
	t.Run("MixedBatchMatchesFold", func(t *testing.T) { t.Parallel(); testMixedBatch(t, newStore) })
	t.Run("PrepareCommitOneBatch", func(t *testing.T) { t.Parallel(); testPrepareCommitOneBatch(t, newStore) })
	t.Run("CommitBeforePrepare", func(t *testing.T) { t.Parallel(); testCommitBeforePrepare(t, newStore) })
	t.Run("SendablesLeased", func(t *testing.T) { t.Parallel(); testSendablesLeased(t, newStore) })
	t.Run("SendLeaseZero", func(t *testing.T) { t.Parallel(); testSendLeaseZero(t, newStore) })
	t.Run("ForwardFirst", func(t *testing.T) { t.Parallel(); testForwardFirst(t, newStore) })
	t.Run("ClaimPartitions", func(t *testing.T) { t.Parallel(); testClaimPartitions(t, newStore) })
	t.Run("ClaimValidation", func(t *testing.T) { t.Parallel(); testClaimValidation(t, newStore) })
	t.Run("ConcurrentClaims", func(t *testing.T) { t.Parallel(); testConcurrentClaims(t, newStore) })
	t.Run("ConcurrentApplySameKeys", func(t *testing.T) { t.Parallel(); testConcurrentApply(t, newStore) })
	t.Run("StaleLease", func(t *testing.T) { t.Parallel(); testStaleLease(t, newStore) })
	t.Run("MarkSent", func(t *testing.T) { t.Parallel(); testMarkSent(t, newStore) })
	t.Run("SendFailures", func(t *testing.T) { t.Parallel(); testSendFailures(t, newStore) })
	t.Run("Checkbacks", func(t *testing.T) { t.Parallel(); testCheckbacks(t, newStore) })
	t.Run("CheckbackClaimCountsTheAttempt", func(t *testing.T) { t.Parallel(); testClaimCountsTheAttempt(t, newStore) })
	t.Run("CheckbackPutOffGivesTheAttemptBack", func(t *testing.T) { t.Parallel(); testPutOffGivesTheAttemptBack(t, newStore) })
	t.Run("FairCheckbackClaim", func(t *testing.T) { t.Parallel(); testFairCheckbackClaim(t, newStore) })
	t.Run("FairCheckbackWeights", func(t *testing.T) { t.Parallel(); testFairCheckbackWeights(t, newStore) })
	t.Run("OperatorActions", func(t *testing.T) { t.Parallel(); testOperatorActions(t, newStore) })
	t.Run("List", func(t *testing.T) { t.Parallel(); testList(t, newStore) })
	t.Run("Counts", func(t *testing.T) { t.Parallel(); testCounts(t, newStore) })
	t.Run("OldestPrepared", func(t *testing.T) { t.Parallel(); testOldestPrepared(t, newStore) })
	t.Run("RetryNowBizID", func(t *testing.T) { t.Parallel(); testRetryNowBizID(t, newStore) })
	t.Run("RetryNowBizIDMany", func(t *testing.T) { t.Parallel(); testRetryNowMany(t, newStore) })
	t.Run("Purge", func(t *testing.T) { t.Parallel(); testPurge(t, newStore) })
	t.Run("OrphanCommits", func(t *testing.T) { t.Parallel(); testOrphanCommits(t, newStore) })
	t.Run("ListOrphans", func(t *testing.T) { t.Parallel(); testListOrphans(t, newStore) })
	t.Run("ScheduledClaim", func(t *testing.T) { t.Parallel(); testScheduledClaim(t, newStore) })
	t.Run("ScheduledBacklog", func(t *testing.T) { t.Parallel(); testScheduledBacklog(t, newStore) })
	t.Run("ScheduledNotInline", func(t *testing.T) { t.Parallel(); testScheduledNotInline(t, newStore) })
	t.Run("ScheduledOrderKey", func(t *testing.T) { t.Parallel(); testScheduledOrderKey(t, newStore) })
	t.Run("Cancel", func(t *testing.T) { t.Parallel(); testCancel(t, newStore) })
	t.Run("AddAudit", func(t *testing.T) { t.Parallel(); testAddAudit(t, newStore) })
	t.Run("AuditLog", func(t *testing.T) { t.Parallel(); testAuditLog(t, newStore) })
	t.Run("ListWithoutBodies", func(t *testing.T) { t.Parallel(); testListWithoutBodies(t, newStore) })
	t.Run("StaleLastError", func(t *testing.T) { t.Parallel(); testStaleLastError(t, newStore) })
}
