package sqlite

// OrphanCommitsSQL is orphanCommitsSQL, for the plan test.
var OrphanCommitsSQL = orphanCommitsSQL
