package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func forwardedRecord(key, value string) *kgo.Record {
	return &kgo.Record{Key: []byte("fk-" + key), Value: []byte(value),
		Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte(bizID + ":" + key)}}}
}

func newTestCollector() *collector {
	return &collector{byKey: map[string]int{}, offsets: map[int32]int64{}}
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
	rep := &Report{Kinds: map[string]int{}}
	check(now, msgs, map[string]int{"called": checkMaxAttempts + 1}, col, rows, rep)
	require.False(t, rep.OK())
	got := violations(rep)
	want := map[string]int{
		"every committed message forwarded at least once":              1, // lost
		"no rolled-back (or undecided) message forwarded or committed": 2, // leak, wrong
		"no message PREPARED beyond its last scheduled check-back":     1, // stale
		"no message forwarded twice except with the same ec-id":        2, // dup's payload, stranger
		"check-back calls per message <= attempt limit (6)":            1, // called
	}
	require.Equal(t, want, got, rep.String())
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
