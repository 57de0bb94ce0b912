package center

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
)

// A center with a control lane: /readyz waits for the lane's topic too;
// the producer API writes the lane's bizIDs to its topic and the others
// to the control topic; both are consumed (the lane in a group of its
// own), stored with their store partitions and forwarded, and one
// ownership set holds both lanes' partitions.
func TestLaneThroughTheCenter(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq", "eventcenter.control.lane.vip.dlq", "orders.events"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	cfg := topicsConfig(t, brokers)
	cfg.Kafka.Lanes = []config.Lane{{Name: "vip", ID: 1, BizIDs: []string{"vip"}}}
	cfg.Ingress.Listen, cfg.Ingress.Insecure = "127.0.0.1:0", true
	var log logBuffer
	c := startTopicsCenter(t, cfg, &log)

	eventuallyReadyz(t, c, &log, http.StatusServiceUnavailable, "control topic eventcenter.control.lane.vip does not exist")
	resp, err := adminClient(t, brokers).CreateTopic(t.Context(), 2, 1, nil, "eventcenter.control.lane.vip")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	eventuallyReadyz(t, c, &log, http.StatusOK, "control lanes: the default and 1 more, every one consuming")
	require.Equal(t, []int32{0, 1, ingest.LaneStride, ingest.LaneStride + 1}, c.Owned.Partitions())

	send := func(biz, topic string) {
		base := "http://" + c.IngressAddr() + "/v1/messages/" + biz + "/k-1"
		code, body := post(t, base+"/prepare", "", "payload", "ec-topic", "orders.events")
		require.Equal(t, http.StatusAccepted, code, body)
		require.Contains(t, body, `"topic":"`+topic+`"`)
		code, body = post(t, base+"/commit", "", "")
		require.Equal(t, http.StatusAccepted, code, body)
		require.Contains(t, body, `"topic":"`+topic+`"`)
	}
	send("vip", "eventcenter.control.lane.vip")
	send("orders", "eventcenter.control")
	for biz, lane := range map[string]int{"vip": 1, "orders": 0} {
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), biz, "k-1")
			return err == nil && m.SendStatus == state.SendSent
		}, 20*time.Second, 10*time.Millisecond, "%s forwarded; log:\n%s", biz, &log)
		m, err := c.Store.Get(t.Context(), biz, "k-1")
		require.NoError(t, err)
		l, p := ingest.LanePartition(m.Partition)
		require.Equal(t, lane, l, "%s stored in partition %d", biz, m.Partition)
		require.True(t, slices.Contains([]int32{0, 1}, p))
	}
	require.Contains(t, log.String(), "group=eventcenter.lane.vip", "the lane has a consumer group of its own")

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	require.Empty(t, c.Owned.Partitions(), "every lane's consumer stopped")
}
