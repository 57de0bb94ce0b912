// Package trends keeps the last hour of the center's state in memory for
// the console's overview charts, so that a lone `eventcenter dev` has them
// without Prometheus.
//
// A Sampler reads the store's counts every few seconds (one Counts query
// per sample, whatever the number of bizIDs: the oldest message of each
// group comes with it) and keeps, per bizID and in total, the forwarded
// rate, the committed-but-unsent backlog and the age of the oldest unsent
// message in a ring buffer. The forwarded rate comes from the forwarder's
// OnSent hook (messages this instance forwarded), and the check-back
// outcomes per endpoint from the verifier's OnOutcome hook, counted per
// minute for the last hour.
package trends
