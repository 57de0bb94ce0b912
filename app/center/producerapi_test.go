package center

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
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
	ctl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("eventcenter.control"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer ctl.Close()
	fs = ctl.PollRecords(ctx, 1)
	require.NoError(t, ctx.Err(), "the control records are there")
	require.Equal(t, uint8(2), fs.Records()[0].Attrs.CompressionType(), "control records are snappy by default: only the center reads them")

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

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certFile, keyFile, pool
}

// ingress.tls serves the API over HTTPS (plain HTTP is refused), and
// request headers are bounded as on Kafka (64 KiB of forward key and
// headers, plus room for the rest): a larger header block is 431.
func TestProducerAPIOverTLSAndHeaderLimit(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	cfg := testConfig(t, cluster.ListenAddrs())
	cfg.Ingress.Listen, cfg.Ingress.Insecure = "127.0.0.1:0", true
	cfg.Ingress.TLS = config.IngressTLS{CertFile: certFile, KeyFile: keyFile}
	il, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), IngressListener: il})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer hc.CloseIdleConnections()
	do := func(scheme string, hdr http.Header) (int, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, scheme+"://"+c.IngressAddr()+"/v1/messages/orders/tls-1/commit", nil)
		require.NoError(t, err)
		maps.Copy(req.Header, hdr)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	code, err := do("https", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	code, err = do("http", nil)
	if err == nil {
		require.Equal(t, http.StatusBadRequest, code, "plain HTTP to a TLS listener")
	}
	large := http.Header{}
	for i := range 12 {
		large.Set(fmt.Sprintf("ec-h-h%d", i), strings.Repeat("v", 10<<10))
	}
	code, err = do("https", large)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, code, "120 KiB of headers")
}
