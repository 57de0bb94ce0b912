package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Insecure mode (no tokens) is refused at start on an address other hosts
// can reach; it used to start with a warning line.
func TestInsecureOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:8080": true, "localhost:8081": true, "[::1]:8080": true,
		"0.0.0.0:8081": false, ":8080": false, "[::]:8080": false, "10.1.2.3:8080": false, "example.com:80": false,
	} {
		cfg := Default()
		cfg.Store = Store{Driver: "sqlite", DSN: "/tmp/x.db", MaxConns: 1}
		cfg.Admin.Insecure = true
		cfg.HTTP.Listen = addr
		err := cfg.Validate()
		if ok {
			require.NoError(t, err, addr)
			continue
		}
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "admin.insecure")
		require.Contains(t, err.Error(), "configure admin.tokens, or listen on 127.0.0.1")

		// With tokens, insecure has no effect and any address is fine.
		cfg.Admin.Tokens = []Token{{Name: "ops", Token: "0123456789abcdef0123", Scope: "admin"}}
		require.NoError(t, cfg.Validate(), addr)
	}
}

func TestHTTPLimitsValidated(t *testing.T) {
	t.Parallel()
	d := Default().HTTP
	require.Positive(t, d.ReadTimeout)
	require.GreaterOrEqual(t, d.WriteTimeout, time.Minute)
	require.Positive(t, d.IdleTimeout)
	require.Positive(t, d.MaxConcurrent)
	cfg := Default()
	cfg.Store = Store{Driver: "sqlite", DSN: "/tmp/x.db", MaxConns: 1}
	cfg.HTTP.ReadTimeout, cfg.HTTP.IdleTimeout, cfg.HTTP.MaxConcurrent = 0, -time.Second, 0
	err := cfg.Validate()
	require.Error(t, err)
	for _, f := range []string{"http.read_timeout", "http.idle_timeout", "http.max_concurrent"} {
		require.Contains(t, err.Error(), f)
	}
	require.NoError(t, Parse([]byte("http: {read_timeout: 5s, write_timeout: 1m, idle_timeout: 30s, max_concurrent: 8}"), &cfg))
	require.Equal(t, HTTP{Listen: "127.0.0.1:8080", ReadTimeout: 5 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 30 * time.Second, MaxConcurrent: 8}, cfg.HTTP)
}
