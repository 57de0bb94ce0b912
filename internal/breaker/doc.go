// Package breaker is the one circuit breaker of the center: the forwarder
// pauses a forward target with it, the verifier a check-back endpoint.
//
// The circuit is sony/gobreaker's two-step breaker: its states (closed,
// open, half-open), its single half-open probe and its generations, which
// drop the outcome of a request allowed before the last state change. This
// package adds two things gobreaker does not have:
//
//   - the cool-down is timed on an injected clock (Config.Now, the
//     project's convention: a func() time.Time, nil for time.Now), so tests
//     move time instead of sleeping; gobreaker's own wall-clock timer is set
//     to its minimum and the breaker keeps the circuit open until the
//     cool-down has passed on Config.Now. A failed probe opens the circuit
//     again for twice the last pause, up to Config.MaxCooldown.
//   - the trip rule is pluggable (Rule): which outcomes are failures and
//     when a run of them opens the circuit. Rounds counts consecutive failed
//     rounds that span a minimum time (forward targets: one broker error
//     fails every batch in flight, which must count once); DistinctKeys
//     counts the distinct keys a run of faults hit (check-back endpoints:
//     one key answered 5xx again and again is that key's problem, a dead
//     endpoint fails every key).
package breaker
