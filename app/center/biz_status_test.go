package center

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/app/config"
)

// GET /api/v1/bizids of a running center carries its verifier's
// check-back settings per bizID (checkback.biz, biz_workers) and its
// forward targets, next to the forward columns.
func TestBizIDsShowCheckbacksAndTargets(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := testConfig(t, cluster.ListenAddrs())
	cfg.Checkback.BizWorkers = 2
	cfg.Checkback.Biz = append(cfg.Checkback.Biz, config.Biz{BizID: "limited", Rate: 5, Burst: 2, Weight: 3})
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()

	resp, err := http.Get("http://" + c.Addr() + adminapi.Prefix + "/bizids")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got adminapi.BizShares
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Len(t, got.BizIDs, 1)
	b := got.BizIDs[0]
	require.Equal(t, "limited", b.BizID)
	require.Equal(t, adminapi.BizCheckback{CheckbackWeight: 3, CheckbackRate: 5, CheckbackBurst: 2, CheckbackWorkers: 2,
		CheckbackThrottled: []string{}}, b.BizCheckback)
	require.Equal(t, []adminapi.TargetThrottle{{Target: "kafka"}}, got.Targets, "the target, never paused")
}
