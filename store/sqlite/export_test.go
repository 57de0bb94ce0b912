package sqlite

// OrphanCommitsSQL is orphanCommitsSQL, for the plan test.
const OrphanCommitsSQL = orphanCommitsSQL
