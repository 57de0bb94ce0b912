package kafka_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder/kafka"
)

func TestCheckTopic(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"orders", "orders.events", "a_b-c.D9", strings.Repeat("t", 249), "..."} {
		require.NoError(t, kafka.CheckTopic(ok), ok)
	}
	for bad, want := range map[string]string{
		"":                       "must not be empty",
		".":                      "is not a kafka topic name",
		"..":                     "is not a kafka topic name",
		"bad topic name!":        "only letters, digits, '.', '_' and '-'",
		"a|b":                    "only letters",
		"50%":                    "only letters",
		strings.Repeat("t", 250): "at most 249",
	} {
		require.ErrorContains(t, kafka.CheckTopic(bad), want, bad)
	}
}
