package cliflags

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("limit", 0, "")
	fs.Int("partitions", 4, "")
	fs.Int64("seed", 0, "")
	fs.Float64("rate", 0, "")
	fs.Duration("timeout", time.Second, "")
	fs.IntSlice("sizes", nil, "")
	fs.String("name", "", "")
	return fs
}

func TestCheck(t *testing.T) {
	t.Parallel()
	rules := Rules{Min: map[string]float64{"partitions": 1}, Negative: []string{"seed"}}
	for _, tc := range []struct {
		args []string
		msg  string // "" for no error
	}{
		{nil, ""},
		{[]string{"--limit", "0", "--partitions", "1", "--rate", "0.5", "--timeout", "0s", "--name", "-x"}, ""},
		{[]string{"--seed", "-7"}, ""},
		{[]string{"--limit", "-1"}, "--limit: must not be negative, got -1"},
		{[]string{"--limit=-1"}, "--limit: must not be negative, got -1"},
		{[]string{"--partitions", "-3"}, "--partitions: must be at least 1, got -3"},
		{[]string{"--partitions", "0"}, "--partitions: must be at least 1, got 0"},
		{[]string{"--rate", "-0.5"}, "--rate: must not be negative, got -0.5"},
		{[]string{"--timeout", "-1s"}, "--timeout: must not be negative, got -1s"},
		{[]string{"--sizes", "1,-2"}, "--sizes: must not be negative, got -2"},
	} {
		fs := flags()
		require.NoError(t, fs.Parse(tc.args))
		err := Check(fs, rules)
		if tc.msg == "" {
			require.NoError(t, err, tc.args)
			continue
		}
		require.EqualError(t, err, tc.msg, tc.args)
	}
	fs := flags()
	require.NoError(t, fs.Parse([]string{"--limit", "-1", "--timeout", "-2m"}))
	err := Check(fs, rules)
	require.ErrorContains(t, err, "--limit")
	require.ErrorContains(t, err, "--timeout", "every bad flag is named")
}
