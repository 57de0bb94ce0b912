package mysql

// The fair check-back claim's statements, for the plan tests.
const (
	FairCheckbackBizSQL   = ckBizSQL
	FairCheckbackClaimSQL = ckClaimSQL
)
