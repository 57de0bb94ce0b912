package postgres

// FairCandidatesSQL is fairCandidatesSQL, for the plan tests.
var FairCandidatesSQL = fairCandidatesSQL
