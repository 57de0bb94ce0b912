package postgres

// FairCheckbackCandidatesSQL is ckCandidatesSQL, for the plan tests.
var FairCheckbackCandidatesSQL = ckCandidatesSQL
