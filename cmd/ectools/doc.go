// Command ectools holds the tools that measure and stress the center; they
// are not part of the product binary (cmd/eventcenter), which stays lean.
//
//	ectools bench ...    load through clientlib, commit-to-forward latency, baselines
//	ectools soak ...     a cluster of "eventcenter serve" processes under faults
//
// soak runs the eventcenter and ecbroker binaries: build them next to ectools
// (go build -o bin/ ./cmd/eventcenter ./cmd/ecbroker ./cmd/ectools) or put
// them in PATH.
package main
