// Package kfaketest injects broker faults into franz-go's in-process kfake
// cluster for tests: produce requests to a topic answered with an error
// code, a given number of times or for ever.
package kfaketest
