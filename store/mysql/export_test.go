package mysql

// Statements, for the plan tests.
const (
	OrphanCommitsSQL   = orphanCommitsSQL
	OldestPreparedSQL  = oldestPreparedSQL
	PurgeSQL           = purgeSQL
	ClaimSendsSQL      = claimSendsSQL
	ClaimCheckbacksSQL = claimCheckbacksSQL
)

// Statements splits a migration file, for tests.
var Statements = statements

// SetBeforeWrite sets a function Apply calls between its row lookup and
// its inserts.
func SetBeforeWrite(s *Store, f func()) { s.beforeWrite = f }
