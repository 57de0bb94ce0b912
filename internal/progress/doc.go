// Package progress reports how far long work is: done/total, rate and the
// estimated time left. On a terminal a Reporter redraws one line (at most
// ten times a second); elsewhere (a log file, CI) it stays quiet and
// writes one line per phase, when the phase ends.
//
// eventcenter move-buckets, eventcenter migrate, eventcenter admin dlq
// replay and ectools soak report through it.
package progress
