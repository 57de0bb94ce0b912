// Package bizshare is the one home of a bizID's share of a component's
// work against the other bizIDs': its weight, and the rate and burst of its
// rate limit (docs/fairness.md). The forwarder (forward.biz[]) and the
// check-back verifier (checkback.biz[]) take the same three values with
// the same meaning of zero; Share checks them and resolves their
// defaults for both.
package bizshare
