package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/internal/cliflags"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:          "ectools",
		Short:        "Tools that measure and stress eventcenter: bench and soak",
		SilenceUsage: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Negative counts and durations are refused before a run starts,
	// naming the flag.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return cliflags.Check(cmd.Flags(), flagRules)
	}
	root.AddCommand(newBench(), newBenchChart(), newSoak())
	return root
}

// flagRules are the numeric flags that need more than "not negative": the
// counts that must be at least 1, and soak's --seed, which may be negative.
var flagRules = cliflags.Rules{
	Min: map[string]float64{
		"partitions": 1, "producers": 1, "centers": 1, "concurrency": 1,
		"checkback-concurrency": 1, "checkback-workers": 1, "store-max-conns": 1,
	},
	Negative: []string{"seed"},
}
