// Package storetest is the conformance suite every store.Store driver runs:
// Exercise checks the state-machine transitions through Apply, leases and
// claims (also under concurrency), mark-sent, listing, counts, operator
// actions with audit, and purge. A driver's test calls
//
//	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store { ... })
//
// with a constructor that returns a fresh, empty, migrated store using the
// given clock. Bench measures a message's store lifecycle in batches.
package storetest
