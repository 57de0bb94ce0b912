package dirlock_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/dirlock"
)

// helperEnv makes the test binary a lock holder: it locks the directory
// named by the variable, prints "locked", and holds the lock until its
// standard input closes.
const helperEnv = "DIRLOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		l, err := dirlock.Acquire(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = l.Release()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// holder starts a second process holding dir and returns it once it holds
// the lock.
func holder(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	return cmd
}

// A second process is refused, with the first one's pid; once the first
// is gone (killed: no clean release) the directory can be taken again.
func TestSecondProcessIsRefusedNamingTheHolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no lock outside Unix")
	}
	dir := t.TempDir()
	first := holder(t, dir)

	_, err := dirlock.Acquire(dir)
	var held *dirlock.HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, first.Process.Pid, held.PID)
	require.Contains(t, err.Error(), fmt.Sprintf("in use by process %d", first.Process.Pid))
	require.Contains(t, err.Error(), dir)

	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	l, err := dirlock.Acquire(dir)
	require.NoError(t, err, "a dead holder's lock file does not block")
	b, err := os.ReadFile(filepath.Join(dir, dirlock.FileName))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(os.Getpid()), strings.TrimSpace(string(b)))
	require.NoError(t, l.Release())
}

// Two Acquires in one process exclude each other too; Release frees the
// directory and empties the pid.
func TestAcquireInOneProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no lock outside Unix")
	}
	dir := t.TempDir()
	l, err := dirlock.Acquire(dir)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, dirlock.FileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, err = dirlock.Acquire(dir)
	var held *dirlock.HeldError
	require.True(t, errors.As(err, &held), "got %v", err)
	require.Equal(t, os.Getpid(), held.PID)

	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "twice is safe")
	b, err := os.ReadFile(filepath.Join(dir, dirlock.FileName))
	require.NoError(t, err)
	require.Empty(t, b)

	l2, err := dirlock.Acquire(dir)
	require.NoError(t, err)
	require.NoError(t, l2.Release())
}

// A missing directory is an error, not a lock.
func TestAcquireMissingDirectory(t *testing.T) {
	_, err := dirlock.Acquire(filepath.Join(t.TempDir(), "nope"))
	require.ErrorContains(t, err, "lock ")
	require.ErrorIs(t, err, os.ErrNotExist)
}
