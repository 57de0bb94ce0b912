package soak

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
)

func forwardedRecord(key, value string) *kgo.Record {
	return &kgo.Record{Key: []byte("fk-" + key), Value: []byte(value),
		Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte(bizID + ":" + key)}}}
}

func newTestCollector() *collector {
	return &collector{byKey: map[string]int{}, firstAt: map[string]time.Time{}, byOrder: map[string][]string{}, offsets: map[int32]int64{}}
}

func violations(rep *Report) map[string]int {
	out := map[string]int{}
	for _, inv := range rep.Invariants {
		out[inv.Name] = inv.Violations
	}
	return out
}

// TestCheckPasses: a clean outcome, including one duplicate with the same
// ec-id and a committed message parked after check-back gave up.
func TestCheckPasses(t *testing.T) {
	t.Parallel()
	now := time.Now()
	msgs := map[string]message{
		"a": {key: "a", kind: kindCommit, decision: committed, envelopeSent: true},
		"b": {key: "b", kind: kindRollback, decision: rolledBack, envelopeSent: true},
		"c": {key: "c", kind: kindOrphan},
		"d": {key: "d", kind: kindCommit, decision: committed},
	}
	col := newTestCollector()
	col.add(forwardedRecord("a", "payload-a"))
	col.add(forwardedRecord("a", "payload-a"))
	rows := map[string]row{
		"a": {status: stCommitted, created: now},
		"b": {status: stRolledBack, created: now},
		"c": {status: stVerifyFailed, attempts: checkMaxAttempts, created: now.Add(-time.Hour)},
		"d": {status: stVerifyFailed, attempts: checkMaxAttempts, created: now},
	}
	rep := &Report{Kinds: map[string]int{}}
	check(now, msgs, map[string]int{"c": checkMaxAttempts}, col, rows, rep)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, 1, rep.ParkedCommitted)
	require.InDelta(t, 1.0, rep.DuplicateRate(), 1e-9)
}

// TestCheckFindsViolations: each invariant reports what breaks it.
func TestCheckFindsViolations(t *testing.T) {
	t.Parallel()
	now := time.Now()
	msgs := map[string]message{
		"lost":   {key: "lost", kind: kindCommit, decision: committed, envelopeSent: true},
		"leak":   {key: "leak", kind: kindRollback, decision: rolledBack, envelopeSent: true},
		"wrong":  {key: "wrong", kind: kindCheckback, decision: rolledBack},
		"stale":  {key: "stale", kind: kindOrphan},
		"called": {key: "called", kind: kindOrphan},
		"dup":    {key: "dup", kind: kindCommit, decision: committed, envelopeSent: true},
	}
	col := newTestCollector()
	col.add(forwardedRecord("leak", "payload-leak"))
	col.add(forwardedRecord("dup", "payload-dup"))
	col.add(forwardedRecord("dup", "another message's payload"))
	col.add(forwardedRecord("stranger", "payload-stranger"))
	rows := map[string]row{
		"lost":   {status: stCommitted, created: now},
		"wrong":  {status: stCommitted, created: now},
		"stale":  {status: stPrepared, created: now.Add(-scheduleBound() - 2*time.Minute)},
		"called": {status: stVerifyFailed, created: now},
	}
	// Centers were SIGKILLed during the run: still no call beyond the
	// limit (the claim counts the attempt).
	rep := &Report{Kinds: map[string]int{}, Faults: map[string]int{faultKill: 3}}
	check(now, msgs, map[string]int{"called": checkMaxAttempts + 1}, col, rows, rep)
	require.False(t, rep.OK())
	got := violations(rep)
	want := map[string]int{
		"every committed message forwarded at least once":                                           1, // lost
		"no rolled-back (or undecided) message forwarded or committed":                              2, // leak, wrong
		"no message PREPARED beyond its last scheduled check-back":                                  1, // stale
		"no message forwarded twice except with the same ec-id":                                     2, // dup's payload, stranger
		"check-back calls per message <= attempt limit (6)":                                         1, // called
		"per order key: first deliveries in commit order, no record before its predecessors' first": 0, // TestCheckOrder
		"every fault injected and undone as planned":                                                0,
		"a center cut off sends nothing once its leases ran out":                                    0,
		"no center exited unless the soak killed or stopped it":                                     0,
	}
	require.Equal(t, want, got, rep.String())
}

// TestCheckFailsOnFaultErrorsAndUnexpectedExits: a run whose messages all
// came out right still fails when a fault could not be injected (its
// survival is not shown) or a center exited without being killed.
func TestCheckFailsOnFaultErrorsAndUnexpectedExits(t *testing.T) {
	t.Parallel()
	now := time.Now()
	msgs := map[string]message{"a": {key: "a", kind: kindCommit, decision: committed, envelopeSent: true}}
	rows := map[string]row{"a": {status: stCommitted, created: now}}
	run := func(rep *Report) *Report {
		col := newTestCollector()
		col.add(forwardedRecord("a", "payload-a"))
		rep.Kinds = map[string]int{}
		check(now, msgs, map[string]int{}, col, rows, rep)
		return rep
	}
	require.True(t, run(&Report{Faults: map[string]int{faultKill: 2, faultPGRestart: 1}}).OK(), "clean")

	rep := run(&Report{Faults: map[string]int{faultKill: 2, faultPGRestart: 1},
		FaultErrors: []string{
			faultKill + ": SIGKILL pid 4242: os: process already finished",
			faultPGRestart + ": postgres: stop for restart: pg_ctl [-m immediate stop]: exit status 1",
		}})
	require.False(t, rep.OK(), "a failed injection fails the run")
	require.Equal(t, 2, violations(rep)["every fault injected and undone as planned"])
	require.Contains(t, rep.String(), "pg_ctl [-m immediate stop]: exit status 1")

	rep = run(&Report{Faults: map[string]int{}, UnexpectedExits: []string{"center 1 (start 2) exited on its own: exit status 1 (see center1.log)"}})
	require.False(t, rep.OK(), "a center that exited by itself fails the run")
	require.Equal(t, 1, violations(rep)["no center exited unless the soak killed or stopped it"])
	require.Contains(t, rep.String(), "center 1 (start 2) exited on its own")

	rep = run(&Report{Faults: map[string]int{faultIsolate: 1}, Unfenced: []string{"center 2 wrote 3 Produce requests while cut off"}})
	require.False(t, rep.OK(), "a center that sent while cut off past its leases fails the run")
	require.Equal(t, 1, violations(rep)["a center cut off sends nothing once its leases ran out"])
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cfg := Config{}
	cfg.setDefaults()
	err := cfg.validate()
	require.ErrorContains(t, err, "Duration must be positive")
	require.ErrorContains(t, err, "EventcenterBin is required")
	require.ErrorContains(t, err, "BrokerBin is required")
	cfg = Config{Duration: time.Second, EventcenterBin: "x", BrokerBin: "y", Rate: -1}
	cfg.setDefaults()
	require.ErrorContains(t, cfg.validate(), "Rate must not be negative")
}

// A center process that exits by itself is recorded; one the soak kills or
// stops is not, and killing one that is gone fails.
func TestCenterExitsAreRecordedUnlessCaused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
		return p
	}
	crash := script("crash.sh", "exit 3")
	runs := script("runs.sh", "exec sleep 60")

	c, err := newCenterProc(0, crash, dir, config.Default())
	require.NoError(t, err)
	require.NoError(t, c.start())
	require.Eventually(t, func() bool { return len(c.unexpectedExits()) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Contains(t, c.unexpectedExits()[0], "center 0 (start 1) exited on its own: exit status 3")
	require.ErrorContains(t, c.kill(), "not running", "a kill of a center that is gone fails")

	c, err = newCenterProc(1, runs, dir, config.Default())
	require.NoError(t, err)
	require.NoError(t, c.start())
	require.NoError(t, c.kill())
	require.NoError(t, c.start())
	require.NoError(t, c.stop(10*time.Second))
	require.Empty(t, c.unexpectedExits(), "killed and stopped by the soak")
}

func orderedRecord(key, orderKey string) *kgo.Record {
	return &kgo.Record{Key: []byte(orderFKPrefix + orderKey), Value: payloadOf(key),
		Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte(bizID + ":" + key)}}}
}

// The per-key order invariant: first deliveries in sequence order, and a
// duplicate after its predecessors' first deliveries pass; an inversion, or
// a record before a predecessor's first, fails.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	msgs := map[string]message{}
	rows := map[string]row{}
	for i, k := range []string{"a", "b", "c"} {
		msgs[k] = message{key: k, kind: kindCommit, decision: committed, envelopeSent: true, orderKey: "o1"}
		rows[k] = row{status: stCommitted, orderKey: "o1", orderSeq: int64(i + 1)}
	}
	run := func(keys ...string) int {
		col := newTestCollector()
		for _, k := range keys {
			col.add(orderedRecord(k, "o1"))
		}
		return checkOrder(msgs, col, rows).Violations
	}
	require.Zero(t, run("a", "b", "c"))
	col := newTestCollector()
	col.add(orderedRecord("a", "o1"))
	rep := &Report{Kinds: map[string]int{}}
	check(time.Now(), msgs, nil, col, rows, rep)
	require.Equal(t, 1, rep.OrderedRecords)
	require.Equal(t, 1, rep.OrderKeys)
	require.Zero(t, run("a", "a", "b", "a", "c", "b"), "duplicates after the first deliveries")
	require.Equal(t, 1, run("a", "c", "b"), "c before b")
	require.Equal(t, 1, run("b", "a", "c", "b"), "b before a; its later duplicate is fine")
	require.Equal(t, 2, run("a", "c", "c", "b"), "a duplicate of c before b's first delivery counts too")
	// A message with the order key's forward key but another order key,
	// or without a sequence, is a violation as well.
	msgs["x"] = message{key: "x", kind: kindCommit, decision: committed, orderKey: "o2"}
	require.Equal(t, 1, run("a", "x"))
}

// TestAfterHealLatency: a message counts toward the last fault that began
// before it was committed, while that fault lasted or within the window
// after its heal; each kind keeps its worst.
func TestAfterHealLatency(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	eps := []episode{
		{kind: faultFailover, began: at(10), healed: at(15)},
		{kind: faultPGCut, began: at(30), healed: at(32)},
	}
	col := newTestCollector()
	msgs := map[string]message{}
	add := func(key string, committedAt, forwardedAt float64, sent bool) {
		msgs[key] = message{key: key, decision: committed, envelopeSent: sent, decidedAt: at(committedAt)}
		col.byKey[key] = 1
		col.firstAt[key] = at(forwardedAt)
	}
	add("before", 5, 25, true)           // before any fault: in the overall worst only
	add("during", 12, 20, true)          // failover, 8 s
	add("after", 19, 21, true)           // failover's window (heal 15 + 5 s), 2 s
	add("late", 21, 22, true)            // past the failover's window
	add("cut", 33, 40, true)             // the cut's window, 7 s
	add("no-commit-sent", 12, 60, false) // learned by check-back: not counted
	hs, worst := afterHeal(eps, msgs, col)
	require.Equal(t, 20*time.Second, worst)
	require.Equal(t, []HealLatency{
		{Kind: faultPGCut, Faults: 1, Messages: 1, Worst: 7 * time.Second, WorstKey: "cut", CommittedIn: 3 * time.Second, AfterHeal: 8 * time.Second},
		{Kind: faultFailover, Faults: 1, Messages: 2, Worst: 8 * time.Second, WorstKey: "during", CommittedIn: 2 * time.Second, AfterHeal: 5 * time.Second},
	}, hs)
}
