package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// previousRelease is the commit of the release before this one, the
// version docs/upgrading.md names as the previous version:
// the upgrade test builds it and upgrades a running cluster from it.
const previousRelease = "790622d"

// upgradeRows is the size of the messages table the migration runs on.
const upgradeRows = 1_000_000

// buildPrevious builds cmd/eventcenter at previousRelease from a git
// worktree in a temporary directory. It skips, saying why, only when the
// commit is not in this clone's history (a shallow clone).
func buildPrevious(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("the previous release %s is not in this clone's git history (a shallow clone? run git fetch --unshallow): %v %s",
			previousRelease, err, out)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", src, previousRelease).CombinedOutput()
	require.NoError(t, err, "git worktree add: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("git", "-C", root, "worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			t.Logf("git worktree remove %s: %v %s", src, err, out)
		}
	})
	bin := filepath.Join(dir, "eventcenter-"+previousRelease)
	build := exec.Command("go", "build", "-o", bin, "./cmd/eventcenter")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "go build at %s: %s", previousRelease, out)
	return bin
}

// startBinaryAt runs the binary at path with args; it is killed at cleanup.
func startBinaryAt(t *testing.T, path string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(path, args...), output: &logbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of %s %v:\n%s", filepath.Base(path), args, p.output.String())
		}
	})
	return p
}

// upgradeConfig is the configuration both versions read: written by hand
// with the keys the previous version knows (it refuses unknown ones).
func upgradeConfig(t *testing.T, e *env) string {
	t.Helper()
	yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
  control_topic: %s
  session_timeout: 6s
store:
  driver: postgres
  dsn: %q
  max_conns: 8
http:
  listen: 127.0.0.1:0
admin:
  insecure: true
ingest:
  send_lease: 8s
forward:
  scan_interval: 100ms
  lease: 8s
  send_timeout: 5s
  backoff_base: 50ms
  backoff_cap: 1s
  max_attempts: 1000
  targets:
    - name: kafka
      type: kafka
      auto_create_topics: true
log:
  level: warn
`, strings.Join(e.brokers, ", "), controlTopic, e.cfg.Store.DSN)
	path := filepath.Join(t.TempDir(), "eventcenter.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

// writeProbe inserts one row at a time into the messages table, as ingest
// does, and keeps the longest insert while measuring is on.
type writeProbe struct {
	measuring atomic.Bool
	longest   atomic.Int64
	n         atomic.Int64
	errs      atomic.Int64
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

func startProbe(t *testing.T, pool *pgxpool.Pool) *writeProbe {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	p := &writeProbe{stop: cancel}
	p.wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			// A sent message: nothing for either center to do with it.
			_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
				send_status, created_at, updated_at, decided_at, sent_at) VALUES ('probe', $1, 0, 2, true, 1, now(), now(), now(), now())`,
				fmt.Sprintf("probe-%d", i))
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				p.errs.Add(1)
				continue
			}
			if p.measuring.Load() {
				if d := int64(time.Since(start)); d > p.longest.Load() {
					p.longest.Store(d)
				}
				p.n.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); p.wg.Wait() })
	return p
}

// TestUpgradeRolling upgrades a cluster under load from the previous
// release to this tree: the previous center runs against PostgreSQL with
// a table of upgradeRows messages, this tree's `migrate` runs while it
// ingests and forwards, a center of this tree joins the same consumer
// group, and the previous one stops; then the binary is rolled back (the
// previous release again, on the new schema). Every committed message is
// forwarded, no rolled-back one is, and no insert waited a second during
// the migration.
//
// The previous release migrated the database to its own version (2). So
// that this tree's migration builds an index on the full table, the test
// takes the schema back to version 1 (drops migration 0002's index and
// its version row) once the previous center runs: it checks the version
// only at start, and that index serves its gauges, not correctness. The
// migration then applies 0002 (CREATE INDEX CONCURRENTLY) and the steps
// after it, as on a database that never applied 0002.
func TestUpgradeRolling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	previous := buildPrevious(t)
	current := binary(t)
	cfgPath := upgradeConfig(t, e)
	ctx := t.Context()

	out, err := exec.CommandContext(ctx, previous, "migrate", "--config", cfgPath).CombinedOutput()
	require.NoError(t, err, "previous migrate: %s", out)
	pool, err := pgxpool.New(ctx, e.cfg.Store.DSN)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	start := time.Now()
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body, payload,
		topic, send_status, created_at, updated_at, decided_at, sent_at)
		SELECT 'history', 'h-' || g, g % 4, 2, true, 'an old payload of some size, as messages have', 'orders.events', 1,
		       now(), now(), now(), now()
		FROM generate_series(1, $1) g`, upgradeRows)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(t, err)
	t.Logf("made %d rows in %s", upgradeRows, time.Since(start).Round(time.Millisecond))

	col := e.collect(businessTopic)
	old := startBinaryAt(t, previous, "serve", "--config", cfgPath)

	// Load through every phase: rounds of prepare/commit/rollback traffic.
	var mu sync.Mutex
	var pl plan
	stopLoad := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for round := 0; ; round++ {
			select {
			case <-stopLoad:
				return
			default:
			}
			p := produceMix(t, e, fmt.Sprintf("up%d", round), 200, 4)
			mu.Lock()
			pl.committed = append(pl.committed, p.committed...)
			pl.rolled = append(pl.rolled, p.rolled...)
			mu.Unlock()
		}
	}()
	produced := func() int { mu.Lock(); defer mu.Unlock(); return len(pl.committed) }
	require.Eventually(t, func() bool { ids, _ := col.count(); return ids >= 300 }, time.Minute, 20*time.Millisecond,
		"the previous center never forwarded anything:\n%s", old.output.String())

	_, err = pool.Exec(ctx, `DROP INDEX eventcenter_messages_orphan_commits;
		DELETE FROM eventcenter_schema_migrations WHERE version >= 2`)
	require.NoError(t, err)

	planOut, err := exec.CommandContext(ctx, current, "migrate", "--plan", "--config", cfgPath).CombinedOutput()
	require.NoError(t, err, "migrate --plan: %s", planOut)
	require.Contains(t, string(planOut), "0002 orphan_commits")
	t.Logf("migrate --plan:\n%s", planOut)

	probe := startProbe(t, pool)
	time.Sleep(200 * time.Millisecond)
	fwdBefore, _ := col.count()
	probe.measuring.Store(true)
	start = time.Now()
	migOut, err := exec.CommandContext(ctx, current, "migrate", "--config", cfgPath).CombinedOutput()
	took := time.Since(start)
	probe.measuring.Store(false)
	require.NoError(t, err, "migrate: %s", migOut)
	fwdAfter, _ := col.count()
	longest := time.Duration(probe.longest.Load())
	t.Logf("migrate took %s; %d probe inserts meanwhile, the longest %s; %d messages forwarded meanwhile\n%s",
		took.Round(time.Millisecond), probe.n.Load(), longest.Round(time.Microsecond), fwdAfter-fwdBefore, migOut)
	require.Contains(t, string(migOut), "index eventcenter_messages_orphan_commits: built in")
	require.Zero(t, probe.errs.Load(), "probe inserts failed")
	require.Positive(t, probe.n.Load())
	require.Less(t, longest, time.Second, "a write stalled for a second or more during the migration")

	// The rolling step: a center of this tree joins the group, then the
	// previous one stops.
	before := produced()
	next := startBinaryAt(t, current, "serve", "--config", cfgPath)
	time.Sleep(3 * time.Second)
	old.interrupt(t)
	require.Zero(t, old.cmd.ProcessState.ExitCode(), "a clean stop of the previous center:\n%s", old.output.String())
	require.Eventually(t, func() bool { return produced() >= before+600 }, time.Minute, 50*time.Millisecond,
		"no load after the handover")

	// Rolling the binary back: the previous release runs on the new schema.
	before = produced()
	back := startBinaryAt(t, previous, "serve", "--config", cfgPath)
	time.Sleep(3 * time.Second)
	next.interrupt(t)
	require.Zero(t, next.cmd.ProcessState.ExitCode(), "a clean stop:\n%s", next.output.String())
	require.Eventually(t, func() bool { return produced() >= before+600 }, time.Minute, 50*time.Millisecond,
		"no load after the rollback")
	close(stopLoad)
	<-loadDone

	mu.Lock()
	final := pl
	mu.Unlock()
	col.waitFor(t, final.committed, 2*time.Minute)
	checkForwarded(t, col, final)
	back.interrupt(t)
	require.Zero(t, back.cmd.ProcessState.ExitCode(), "a clean stop:\n%s", back.output.String())
}
