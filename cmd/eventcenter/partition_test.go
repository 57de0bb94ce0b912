package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

func TestPartitionFor(t *testing.T) {
	out, err := run(t, "partition-for", "shop", "order-42", "--partitions", "12")
	require.NoError(t, err)
	require.Equal(t, envelope.PartitionFor("shop:order-42", 12), mustAtoi(t, strings.TrimSpace(out)))
	_, err = run(t, "partition-for", "shop", "order-42")
	require.ErrorContains(t, err, "--partitions")
}

func mustAtoi(t *testing.T, s string) int32 {
	t.Helper()
	var n int32
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "%q is not a number", s)
		n = n*10 + int32(c-'0')
	}
	return n
}
