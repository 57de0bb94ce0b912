package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
)

// TestDLQLane: --lane reads and replays the lane's dead-letter topic, not
// the default one; list names the lanes.
func TestDLQLane(t *testing.T) {
	t.Parallel()
	def, gold, bulk := &pagedDLQ{n: 2, fail: -1}, &memDLQ{}, &pagedDLQ{n: 3, fail: -1}
	env := admintest.New(t, def, func(c *admin.Config) {
		c.LaneDLQs = []admin.LaneDLQ{{Lane: "gold", DLQ: gold}, {Lane: "bulk", DLQ: bulk}}
	})

	out, errOut, err := run(t, env, admintest.ReadToken, "dlq", "list", "--lane", "gold")
	require.NoError(t, err)
	require.Regexp(t, `PARTITION\s+OFFSET\s+TIME\s+KEY\s+REASON\n2\s+5\s+\S+\s+orders:k\s+decode: missing ec-key\n`, out)
	require.Equal(t, "more: --cursor 2:6\ndead letters of lane gold; lanes: gold, bulk (--lane NAME; none for the default)\n", errOut)
	_, errOut, err = run(t, env, admintest.ReadToken, "dlq", "list")
	require.NoError(t, err)
	require.Equal(t, "dead letters of the default lane; lanes: gold, bulk (--lane NAME; none for the default)\n", errOut)
	out, _, err = run(t, env, admintest.ReadToken, "dlq", "--lane", "gold", "get", "2", "5")
	require.NoError(t, err)
	require.Regexp(t, `lane\s+gold\n`, out)
	require.Contains(t, out, "junk whole")

	out, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5", "--lane", "gold", "--reason", "producer fixed")
	require.NoError(t, err)
	require.Equal(t, "replayed 2/5 to the control topic of lane gold (audited on orders:o-1)\n", out)
	require.Equal(t, []string{"2/5"}, gold.replayed)
	require.Empty(t, def.replayed)

	out, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "--all", "--lane", "bulk", "--reason", "producer fixed")
	require.NoError(t, err)
	require.Equal(t, "replayed 3 of 3 dead-letter records to the control topic of lane bulk\n", out)
	require.Equal(t, []int64{0, 1, 2}, bulk.replayed)
	require.Empty(t, def.replayed)
	require.Equal(t, []string{"2/5"}, gold.replayed)

	_, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5", "--lane", "bronze", "--reason", "r")
	require.ErrorContains(t, err, `replay dead letter 2/5 of lane bronze: 400 Bad Request: lane "bronze": no such lane; configured lanes: gold, bulk`)
	_, _, err = run(t, env, admintest.ReadToken, "dlq", "list", "--lane", "bronze")
	require.ErrorContains(t, err, "400 Bad Request")
	require.Equal(t, []string{"2/5"}, gold.replayed)
}
