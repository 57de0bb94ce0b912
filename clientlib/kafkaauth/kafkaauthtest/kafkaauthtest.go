// Package kafkaauthtest makes a throwaway certificate authority for tests
// of TLS connections: a CA file, a server certificate for 127.0.0.1 and
// "localhost", client certificates (expired ones too).
package kafkaauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PKI is a test CA with a server certificate for 127.0.0.1 / "localhost"
// and files for the CA and client certificates.
type PKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAFile string
	server tls.Certificate
}

// New makes a CA and a server certificate valid for an hour.

func New(t testing.TB) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &PKI{dir: t.TempDir(), ca: ca, caKey: key}
	p.CAFile = filepath.Join(p.dir, "ca.pem")
	require.NoError(t, os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	certPEM, keyPEM := p.Issue(t, "localhost", time.Now().Add(time.Hour), x509.ExtKeyUsageServerAuth)
	p.server, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return p
}

// Issue signs a certificate for name valid until notAfter.
func (p *PKI) Issue(t testing.TB, name string, notAfter time.Time, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notAfter.Add(-2 * time.Hour), NotAfter: notAfter,
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// ClientFiles writes a client certificate valid until notAfter.
func (p *PKI) ClientFiles(t testing.TB, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	c, k := p.Issue(t, "client", notAfter, x509.ExtKeyUsageClientAuth)
	certFile, keyFile = filepath.Join(t.TempDir(), "client.pem"), filepath.Join(t.TempDir(), "client.key")
	require.NoError(t, os.WriteFile(certFile, c, 0o600))
	require.NoError(t, os.WriteFile(keyFile, k, 0o600))
	return certFile, keyFile
}

// ServerTLS is the brokers' listener configuration; with mutual it
// requires client certificates signed by the CA.
func (p *PKI) ServerTLS(mutual bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		pool := x509.NewCertPool()
		pool.AddCert(p.ca)
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c
}
