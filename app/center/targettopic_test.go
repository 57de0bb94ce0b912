package center

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

// Ingest checks a forward topic with the rule of the target it names (the
// default target when it names none), the rule the target sends with.
func TestTargetTopicCheck(t *testing.T) {
	t.Parallel()
	check := targetTopicCheck(config.Forward{DefaultTarget: "k", Targets: []config.Target{
		{Name: "k", Type: "kafka"}, {Name: "r", Type: "rocketmq"},
	}})
	require.NoError(t, check("", "rmq.out"))
	require.NoError(t, check("k", "rmq.out"))
	require.ErrorContains(t, check("r", "rmq.out"), `rocketmq topic "rmq.out" is invalid`)
	require.NoError(t, check("r", "rmq_out"))
	require.ErrorContains(t, check("", "a|b"), `kafka topic "a|b" is invalid`)
	require.NoError(t, check("unknown", "a|b"), "the forwarder reports unknown targets")
}
