package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The product binary links no tooling: bench, soak, the raw-SQL baseline
// and the producer library live in cmd/ectools, and the RocketMQ stand-in
// of "dev --rocketmq" only in a build with -tags rocketmqfake.
func TestProductBinaryLinksNoTools(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	deps := strings.Fields(string(out))
	for _, tool := range []string{
		"github.com/eventcenter/eventcenter/cmd/ectools/internal/bench",
		"github.com/eventcenter/eventcenter/cmd/ectools/internal/soak",
		"github.com/eventcenter/eventcenter/store/rawlifecycle",
		"github.com/eventcenter/eventcenter/clientlib",
		"github.com/eventcenter/eventcenter/testsupport/rocketmqfake",
		"runtime/pprof",
	} {
		require.False(t, slices.Contains(deps, tool), "the product binary links %s", tool)
	}
}
