package postgres

// MarkSentSQL is markSentSQL, for the plan tests.
var MarkSentSQL = markSentSQL

// OrphanCommitsSQL is orphanCommitsSQL, for the plan tests.
var OrphanCommitsSQL = orphanCommitsSQL

// SentRefs is sentRefs, for the plan tests.
var SentRefs = sentRefs

// ClaimSendsSQL is the send claim, for the plan tests.
var ClaimSendsSQL = claimSendsSQL

// ClaimOrderedSendsSQL is claimOrderedSendsSQL, for the plan tests.
var ClaimOrderedSendsSQL = claimOrderedSendsSQL

// FairClaimSendsSQL is the fair send claim, for the plan tests.
var FairClaimSendsSQL = fairClaimSendsSQL

// ClaimNextSQL is claimNextSQL, for the plan tests.
var ClaimNextSQL = claimNextSQL
