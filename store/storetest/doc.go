// Package storetest is the conformance suite every store.Store driver runs,
// and the helpers tests elsewhere use to drive a store.
//
// Exercise checks, against a fresh store per test with a controllable Clock:
// every transition of docs/state-machine.md's table through Apply (envelopes, check-back
// results, send results, operator actions with their audit records), the
// outcome or error of each change (ErrWrongState, ErrNotFound), crash
// replays, multi-row batches against store.Fold computed in memory, leases
// and claims (also with many concurrent claimers), lease-token-guarded
// results, MarkSent, backoff to DEAD and VERIFY_FAILED, List filters and
// pages (the orphan COMMIT filter too), Counts, OldestPrepared,
// OrphanCommits, AddAudit, AuditLog, RetryNowBizID, Purge (which leaves
// audit records) and PurgeAudit. A driver's test
// calls
//
//	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store { ... })
//
// with a constructor that returns a fresh, empty, migrated store reading
// time from now.
//
// BenchLifecycle measures a message's store lifecycle (Apply the prepares,
// Apply the commits, MarkSent) in batches of BatchSize; BenchCompare runs
// it interleaved with the same writes done as raw SQL by the driver's test.
package storetest
