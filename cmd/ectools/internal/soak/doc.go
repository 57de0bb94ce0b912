// Package soak is the cluster soak and chaos harness behind
// "ectools soak": it starts ecbroker (a Kafka-protocol broker in its own
// process), a throwaway PostgreSQL cluster (initdb into a temporary
// directory), several "eventcenter serve" processes, producers using
// clientlib (commit, rollback, commit-before-prepare as raw records,
// messages left for check-back) and a check-back server that knows each
// message's truth. While the producers run it injects faults at random from
// a printed seed: SIGKILL and restart of a center, SIGSTOP/SIGCONT (a
// stalled member), PostgreSQL restarts, broker produce and fetch errors,
// check-back endpoint outages, faults of one center's link to PostgreSQL,
// the broker or the check-back endpoint at fault points of its own (netProxy:
// cut, delayed, lossy or flapping, one way or both), one center cut from
// PostgreSQL and the broker at once past its lease and session, and one
// control-topic partition increase.
// Afterwards it reads the business topic and the store and checks the
// invariants (see Report).
package soak
