package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	// bench links the center, and with it the RocketMQ client, which
	// starts package-level goroutines.
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot(&out, &out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// Negative counts and durations are refused, naming the flag, before a
// bench or soak run starts.
func TestNegativeFlagsAreErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "--messages", "-1"}, "--messages: must not be negative, got -1"},
		{[]string{"bench", "--duration", "-1m"}, "--duration: must not be negative, got -1m0s"},
		{[]string{"bench", "--rate", "-5"}, "--rate: must not be negative, got -5"},
		{[]string{"bench", "--producers", "0"}, "--producers: must be at least 1, got 0"},
		{[]string{"bench", "--checkback-first-delay", "-1s"}, "--checkback-first-delay: must not be negative, got -1s"},
		{[]string{"soak", "--partitions", "-3"}, "--partitions: must be at least 1, got -3"},
		{[]string{"soak", "--centers", "-1"}, "--centers: must be at least 1, got -1"},
		{[]string{"soak", "--fault-every", "-4s"}, "--fault-every: must not be negative, got -4s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			root := newRoot(io.Discard, io.Discard)
			root.SetArgs(tc.args)
			require.EqualError(t, root.ExecuteContext(ctx), tc.msg)
		})
	}
	// soak's seed may be negative: the run gets past the flag check (and
	// fails on its own configuration).
	_, err := run(t, "soak", "--seed", "-7", "--duration", "0s")
	require.ErrorContains(t, err, "Duration")
}

// soak finds the eventcenter and ecbroker binaries next to itself first.
func TestFindBinaryPrefersTheDirectoryOfThisBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self := filepath.Join(dir, "ectools")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "eventcenter"), nil, 0o755))
	require.Equal(t, filepath.Join(dir, "eventcenter"), findBinary(self, "eventcenter"))
	// Neither next to it nor in PATH: the path next to it, for the error.
	require.Equal(t, filepath.Join(dir, "no-such-tool-here"), findBinary(self, "no-such-tool-here"))
}
