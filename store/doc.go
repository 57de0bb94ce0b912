// Package store is the seam between the center and its database: the Store
// interface, its request and result types, the sentinel errors drivers
// translate theirs into, and Fold, the shared "apply the state machine to
// loaded rows" step every driver uses so that drivers cannot drift apart.
//
// Drivers: store/postgres (pgx/v5, production), store/mysql and
// store/sqlite (modernc.org/sqlite, the embedded default), over one shared
// core (store/internal/sqlcore: Apply, RetryNowBizID and the reads, fed
// with each driver's transaction and SQL fragments). All pass the
// conformance suite in store/storetest.
package store
