package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
)

// registryDriverResult is what a language's registry driver prints.
type registryDriverResult struct {
	Prepared struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"prepared"`
	Refused map[string]struct {
		Status  int    `json:"status"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"refused"`
}

// badRegistryVerify are registry forms the producer API refuses, with
// what its answer says.
var badRegistryVerify = map[string]string{
	"zookeeper://127.0.0.1:2181":                                   "want zookeeper://host:port/<interface>",
	"zookeeper://127.0.0.1:2181/com.shop.TxChecker?protocol=dubbo": `protocol="dubbo" (want tri or jsonrpc`,
	"nacos://127.0.0.1:8848/com.shop.TxChecker":                    "nacos registry addresses are not supported",
}

// TestClientsRegistryForm: the Python and Node clients pass a
// zookeeper:// ec-verify to the center as written; the center stores it,
// finds the provider registered in a real ZooKeeper and checks back with
// it (the provider commits), and the clients see the registry forms it
// refuses as 400s naming ec-verify.
func TestClientsRegistryForm(t *testing.T) {
	python := needTool(t, "python3")
	node := needTool(t, "node")
	zs := zktest.Start(t)

	var mu sync.Mutex
	asked := map[string]int{}
	provider := httptest.NewServer(clientlib.NewCheckbackHandler(func(_ context.Context, bizID, key string) (clientlib.Decision, error) {
		mu.Lock()
		asked[bizID+":"+key]++
		mu.Unlock()
		return clientlib.DecisionCommit, nil
	}, clientlib.WithSecret(secret)))
	t.Cleanup(provider.Close)
	host := strings.TrimPrefix(provider.URL, "http://")
	const iface = "com.shop.TxChecker"
	zktest.Register(t, zs.Addr, fmt.Sprintf("tri://%s/%s?interface=%s&version=1.0.0&group=order&methods=verifyMessage&side=provider", host, iface, iface))

	w := newWorldWith(t, func(c *config.Config) {
		for i := range c.Checkback.Biz {
			c.Checkback.Biz[i].Allow = append(c.Checkback.Biz[i].Allow, "zookeeper://"+zs.Addr, "zookeeper://127.0.0.1:1", "tri://"+host)
		}
	}, "py", "node")
	verify := "zookeeper://" + zs.Addr + "/" + iface + "?version=1.0.0&group=order&protocol=tri&backup=127.0.0.1:1"
	bad, err := json.Marshal(func() []string {
		var l []string
		for v := range badRegistryVerify {
			l = append(l, v)
		}
		return l
	}())
	require.NoError(t, err)

	for biz, argv := range map[string][]string{
		"py":   {python, filepath.Join("python", "tests", "registry_driver.py")},
		"node": {node, filepath.Join("node", "test", "registry-driver.mjs")},
	} {
		t.Run(biz, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1",
				"EC_URL=http://"+w.center.IngressAddr(), "EC_TOKEN="+biz+"-producer-token-0123456789", "EC_BIZ="+biz,
				"EC_VERIFY="+verify, "EC_BAD_VERIFY="+string(bad))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "driver failed:\n%s", stderr.String())
			var res registryDriverResult
			require.NoError(t, json.Unmarshal(out, &res), "driver output:\n%s\n%s", out, stderr.String())

			require.Equal(t, "prepare", res.Prepared.Type)
			require.Equal(t, biz+":"+biz+"-zk", res.Prepared.ID)
			require.Len(t, res.Refused, len(badRegistryVerify))
			for v, why := range badRegistryVerify {
				r := res.Refused[v]
				require.Equal(t, 400, r.Status, v)
				require.Equal(t, "ec-verify", r.Field, v)
				require.Contains(t, r.Message, why, v)
			}

			// The center kept the endpoint as written and decided the
			// message by asking the provider it found in the registry.
			require.Eventually(t, func() bool {
				m, err := w.center.Store.Get(t.Context(), biz, biz+"-zk")
				return err == nil && m.Status == state.Committed
			}, 30*time.Second, 20*time.Millisecond, "not committed through the registry")
			m, err := w.center.Store.Get(t.Context(), biz, biz+"-zk")
			require.NoError(t, err)
			require.Equal(t, verify, m.Verify)
			require.GreaterOrEqual(t, m.VerifyAttempts, 1)
			mu.Lock()
			defer mu.Unlock()
			require.Positive(t, asked[biz+":"+biz+"-zk"], "the registered provider was asked")
			_, err = w.center.Store.Get(t.Context(), biz, biz+"-zk-bad")
			require.Error(t, err, "a refused PREPARE is not stored")
		})
	}
}
