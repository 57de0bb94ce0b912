package producerapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writePair writes a self-signed certificate for cn and its key.
func writePair(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{cn}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile
}

func commonName(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	require.NoError(t, err)
	return leaf.Subject.CommonName
}

// The certificate is re-read when its files change; a broken pair keeps
// the previous one.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, "one.example")
	cfg, err := TLSConfig(certFile, keyFile, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	c, err := cfg.GetCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, "one.example", commonName(t, c))

	// The files are looked at at most once a second.
	time.Sleep(1100 * time.Millisecond)
	writePair(t, dir, "two.example")
	c, err = cfg.GetCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, "two.example", commonName(t, c))

	time.Sleep(1100 * time.Millisecond)
	require.NoError(t, os.WriteFile(keyFile, []byte("not a key"), 0o600))
	c, err = cfg.GetCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, "two.example", commonName(t, c), "a broken pair keeps the previous certificate")

	_, err = TLSConfig(filepath.Join(dir, "missing.pem"), keyFile, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "ingress.tls")
}
