package center

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/internal/config"
)

func post(t *testing.T, u, token, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The producer API on its own listener: a PREPARE and COMMIT over HTTP are
// forwarded (gzip, the default codec) like any other message, GET shows
// the state, a token from a file is re-read when it changes, and admin
// tokens are not producer tokens.
func TestProducerAPIThroughTheCenter(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq", "orders.events"))
	require.NoError(t, err)
	defer cluster.Close()
	dir := t.TempDir()
	tokFile := writeSecret(t, dir, "producer", "producer-token-0123456789")
	cfg := testConfig(t, cluster.ListenAddrs())
	cfg.Admin.Insecure = false
	cfg.Admin.Tokens = []config.Token{{Name: "ops", Scope: "admin", Token: "admin-token-0123456789"}}
	cfg.Ingress.Listen = "127.0.0.1:0"
	cfg.Ingress.Tokens = []config.IngressToken{{Name: "orders-svc", BizIDs: []string{"orders"}, TokenFile: tokFile}}
	require.NoError(t, cfg.ResolveSecrets())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), Listener: l, SecretCheckInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()
	require.NotEmpty(t, c.IngressAddr())
	require.NotEqual(t, c.Addr(), c.IngressAddr())
	base := "http://" + c.IngressAddr() + "/v1/messages/orders/o-1"

	code, body := post(t, base+"/prepare", "admin-token-0123456789", "x", "ec-topic", "orders.events")
	require.Equal(t, http.StatusUnauthorized, code, "an admin token is no producer token: %s", body)
	payload := strings.Repeat("order 42 paid; ", 50)
	code, body = post(t, base+"/prepare", "producer-token-0123456789", payload, "ec-topic", "orders.events", "ec-fkey", "o-1")
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = post(t, base+"/commit", "producer-token-0123456789", "")
	require.Equal(t, http.StatusAccepted, code, body)

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders.events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	fs := cl.PollRecords(ctx, 1)
	require.NoError(t, ctx.Err(), "the message is forwarded")
	rec := fs.Records()[0]
	require.Equal(t, payload, string(rec.Value))
	require.Equal(t, "o-1", string(rec.Key))
	require.Equal(t, uint8(1), rec.Attrs.CompressionType(), "forwarded as gzip by default")

	require.Eventually(t, func() bool {
		code, body := get(t, http.DefaultClient, base, "producer-token-0123456789")
		var st struct {
			Status     string `json:"status"`
			SendStatus string `json:"send_status"`
		}
		_ = json.Unmarshal([]byte(body), &st)
		return code == http.StatusOK && st.Status == "COMMITTED" && st.SendStatus == "SENT"
	}, 10*time.Second, 20*time.Millisecond)

	// Rotation through the token file.
	require.NoError(t, os.WriteFile(tokFile, []byte("rotated-producer-token-0123\n"), 0o600))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(tokFile, later, later))
	require.Eventually(t, func() bool {
		code, _ := get(t, http.DefaultClient, base, "rotated-producer-token-0123")
		return code == http.StatusOK
	}, 10*time.Second, 5*time.Millisecond)
	code, _ = get(t, http.DefaultClient, base, "producer-token-0123456789")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Positive(t, counter(t, c, "eventcenter_ingress_envelopes_total"))
}

// Off unless ingress.listen is set.
func TestProducerAPIOffByDefault(t *testing.T) {
	t.Parallel()
	c, err := New(t.Context(), testConfig(t, []string{"127.0.0.1:1"}), Options{Logger: quiet()})
	require.NoError(t, err)
	require.Empty(t, c.IngressAddr())
	require.Nil(t, c.producerAPI)
	require.NoError(t, c.Stop(t.Context()))
}
