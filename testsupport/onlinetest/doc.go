// Package onlinetest checks that a schema migration step is online: while
// the step runs, one connection inserts rows the way ingest does, and a
// watcher samples that connection's wait state in the database's own
// session view (pg_stat_activity, MariaDB's process list). The step is
// judged by the time the inserts were seen waiting for a lock, not by how
// long an insert took: on a loaded machine an insert also waits for a
// core, which says nothing about locks.
//
// It holds the loop and the judgement; each store's test supplies the
// insert and the lock-wait probe for its driver.
package onlinetest
