// Package dirlock gives one process at a time a directory: Acquire takes
// an exclusive flock(2) on a lock file in it and writes the holder's pid
// there, so that a second process sharing the directory (eventcenter dev's
// --data-dir: the SQLite file and the embedded broker's files) fails at
// start naming the first one instead of both running over the same files.
//
// The kernel drops the lock when its holder exits, however it exits (kill
// -9 included): a stale lock file from a crashed run never blocks a new
// one. Elsewhere than on Unix, Acquire only writes the pid (no lock).
package dirlock
