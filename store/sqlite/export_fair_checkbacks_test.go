package sqlite

// The fair check-back claim's statements, for the plan tests.
var (
	FairCheckbackBizSQL        = ckBizSQL
	FairCheckbackCandidatesSQL = ckCandidatesSQL
)
