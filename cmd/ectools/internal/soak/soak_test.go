package soak

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ciSeed is the soak test's fixed seed: a failure replays with
// "ectools soak --duration 75s --rate 150 --fault-every 3s --seed 8".
const ciSeed = 8

// soakBinaries skips the test with -short or without PostgreSQL (fails
// it on CI), builds eventcenter and ecbroker and returns a Config with
// them and the PostgreSQL binaries.
func soakBinaries(t *testing.T) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("a soak runs minutes; skipped with -short")
	}
	pgBin := "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL binaries missing in %s (CI=true: .ci/run installs the postgresql package)", pgBin)
		}
		t.Skipf("PostgreSQL binaries missing in %s (apt-get install postgresql); skipping the soak", pgBin)
	}
	bin := t.TempDir()
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/eventcenter", "./cmd/ecbroker")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return Config{
		EventcenterBin: filepath.Join(bin, "eventcenter"),
		BrokerBin:      filepath.Join(bin, "ecbroker"),
		PGBinDir:       pgBin,
		Out:            tWriter{t},
	}
}

// TestSoakShort runs the soak for 75 s with faults (about 10 of them) and a
// fixed seed, and requires every invariant to hold.
func TestSoakShort(t *testing.T) {
	cfg := soakBinaries(t)
	cfg.Duration, cfg.Rate, cfg.Seed, cfg.Faults, cfg.FaultEvery = 75*time.Second, 150, ciSeed, true, 3*time.Second
	rep, err := Run(t.Context(), cfg)
	if rep != nil {
		t.Log("\n" + rep.String())
	}
	require.NoError(t, err)
	require.True(t, rep.Converged, "the run did not converge")
	require.True(t, rep.OK())
	require.NotZero(t, rep.ForwardedIDs)
	require.NotZero(t, rep.OrderedRecords, "no message with an order key was forwarded: the ordering invariant checked nothing")
	require.NotZero(t, rep.OrderedAhead, "no ordered message was written ahead: the invariant never checked that path")
	require.Equal(t, 1, rep.Faults[faultPartitions], "the partition increase did not happen")
	require.GreaterOrEqual(t, rep.Faults[faultPGCut], 1, "no center's link to PostgreSQL was cut")
	require.GreaterOrEqual(t, rep.Faults[linkFault("broker", "cut")], 1, "no center's link to the broker was cut")
	require.GreaterOrEqual(t, rep.Faults[linkFault("check-back", "cut")], 1, "no center's link to the check-back endpoint was cut")
	require.Equal(t, 1, rep.Faults[faultIsolate], "no center was cut from PostgreSQL and the broker at once")
}

// TestSoakFailover runs the soak with a synchronous standby whose
// replication link lags 300 ms, and PostgreSQL failovers as its only
// fault (the primary crashed, what the link held dropped, the standby
// promoted, a new standby made from the new primary): at least two, so
// that the second fails over to the rebuilt standby. It fails with
// asynchronous replication: what the primary committed in its last
// 300 ms is lost, check-back attempt counts and order sequences with it.
func TestSoakFailover(t *testing.T) {
	cfg := soakBinaries(t)
	cfg.Duration, cfg.Rate, cfg.Seed, cfg.Faults, cfg.FaultEvery = 30*time.Second, 100, ciSeed, true, 3*time.Second
	cfg.Standby, cfg.StandbyLag = StandbySync, 300*time.Millisecond
	cfg.faultKinds = map[string]bool{faultFailover: true}
	rep, err := Run(t.Context(), cfg)
	if rep != nil {
		t.Log("\n" + rep.String())
	}
	require.NoError(t, err)
	require.True(t, rep.Converged, "the run did not converge")
	require.True(t, rep.OK())
	require.GreaterOrEqual(t, rep.Faults[faultFailover], 2, "fewer than two failovers")
	require.Len(t, rep.Faults, 1, "faults other than failovers")
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
