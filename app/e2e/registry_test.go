package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
)

// TrustMessage producers name their Dubbo check-back service by its
// ZooKeeper registry: a MiddlewareMessage JSON PREPARE with protocolType 2
// and a registryAddress, and a native PREPARE with a zookeeper://
// ec-verify, are checked back through the providers registered there
// (Triple and JSON-RPC, clientlib's handler behind each) and forwarded or
// rolled back; /readyz and the metrics show the registry.
func TestCheckbackThroughZooKeeperRegistry(t *testing.T) {
	t.Parallel()
	zs := zktest.Start(t)
	tri, rpc := newProducerServer(t), newProducerServer(t)
	triHost, rpcHost := strings.TrimPrefix(tri.URL, "http://"), strings.TrimPrefix(rpc.URL, "http://")
	const iface = "com.shop.TxChecker"
	zktest.Register(t, zs.Addr, fmt.Sprintf("tri://%s/%s?interface=%s&version=1.0.0&methods=verifyMessage&side=provider", triHost, iface, iface))
	zktest.Register(t, zs.Addr, fmt.Sprintf("jsonrpc://%s/%s?interface=%s&version=1.0.0&methods=verifyMessage&side=provider", rpcHost, iface, iface))
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 200 * time.Millisecond
		c.Checkback.BackoffBase = 100 * time.Millisecond
		c.Checkback.Allow = []string{"zookeeper://" + zs.Addr, "tri://" + triHost, "jsonrpc://" + rpcHost}
	})
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)

	var pl plan
	raw := e.raw()
	for i := range 10 {
		for _, decision := range []string{"commit", "rollback"} {
			key := fmt.Sprintf("%s-tm-%d", decision, i)
			value := fmt.Sprintf(`{"message":"payload-%s","bizID":1001,"messageKey":%q,"messageStatus":1,"forwardTopic":%q,"forwardKey":"fk",
				"verifyInfo":{"protocolType":2,"registryProtocol":"zookeeper","registryAddress":%q,"url":%q,"version":"1.0.0"}}`,
				key, key, businessTopic, zs.Addr, iface)
			require.NoError(t, raw.ProduceSync(t.Context(), &kgo.Record{Topic: controlTopic, Key: []byte("1001:" + key), Value: []byte(value)}).FirstErr())
			pl.add(decision, envelope.Key("1001", key))
		}
	}
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	for i := range 10 {
		for _, decision := range []string{"commit", "rollback"} {
			key := fmt.Sprintf("%s-native-%d", decision, i)
			require.NoError(t, p.Prepare(t.Context(), clientlib.Message{BizID: "orders", Key: key, Payload: []byte("payload-" + key),
				ForwardTopic: businessTopic, Verify: "zookeeper://" + zs.Addr + "/" + iface + "?version=1.0.0"}))
			pl.add(decision, envelope.Key("orders", key))
		}
	}
	col.waitFor(t, pl.committed, time.Minute)
	for _, id := range pl.rolled {
		biz, key, _ := envelope.SplitKey(id)
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), biz, key)
			return err == nil && m.Status == state.RolledBack
		}, 30*time.Second, 20*time.Millisecond, "%s not rolled back by check-back", id)
	}
	for _, id := range pl.committed {
		_, key, _ := envelope.SplitKey(id)
		for _, r := range col.get(id) {
			require.Equal(t, "payload-"+key, r.Value, id)
		}
	}
	for _, id := range pl.rolled {
		require.Empty(t, col.get(id), "rolled-back %s was forwarded", id)
	}
	tri.mu.Lock()
	triCalls := len(tri.calls)
	tri.mu.Unlock()
	rpc.mu.Lock()
	rpcCalls := len(rpc.calls)
	rpc.mu.Unlock()
	require.Positive(t, triCalls, "the Triple provider was called")
	require.Positive(t, rpcCalls, "the JSON-RPC provider was called")
	require.Equal(t, 40, triCalls+rpcCalls, "each message asked once")

	n := testutil.ToFloat64(counter(t, c, "eventcenter_checkback_registry_total", map[string]string{"registry": zs.Addr, "outcome": "commit"}))
	require.Equal(t, 20.0, n)
	require.Equal(t, 1.0, testutil.ToFloat64(counter(t, c, "eventcenter_checkback_registry_connected", map[string]string{"registry": zs.Addr})))
	resp, err := http.Get("http://" + c.Addr() + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "check-back registry zookeeper://"+zs.Addr+": connected; 1 services watched, 2 providers")

	// The operator's view: GET /api/v1/registries.
	resp, err = http.Get("http://" + c.Addr() + "/api/v1/registries")
	require.NoError(t, err)
	var regs adminapi.CheckbackRegistries
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&regs))
	_ = resp.Body.Close()
	require.Len(t, regs.Registries, 1)
	r := regs.Registries[0]
	require.Equal(t, zs.Addr, r.Registry)
	require.True(t, r.Connected)
	require.Equal(t, []adminapi.RegistryService{{Interface: iface, Providers: 2, Known: true, Updated: r.Services[0].Updated}}, r.Services)
	require.Equal(t, map[string]int64{"commit": 20, "rollback": 20}, r.Outcomes)

	// The registry down: the center stays ready and says so.
	zs.Stop()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + c.Addr() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "check-back registry zookeeper://"+zs.Addr+": NOT connected")
	}, 30*time.Second, 20*time.Millisecond)
}

func (pl *plan) add(decision, id string) {
	if decision == "commit" {
		pl.committed = append(pl.committed, id)
	} else {
		pl.rolled = append(pl.rolled, id)
	}
}
