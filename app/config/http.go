package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// HTTP is the listener for the admin API, /ui, /metrics, /healthz, /readyz.
type HTTP struct {
	Listen string `yaml:"listen" env:"EVENTCENTER_HTTP_LISTEN"`
	// ReadTimeout bounds reading one whole request, body included;
	// WriteTimeout bounds answering it (from the end of its headers; long
	// enough for the largest console page); IdleTimeout closes a keep-alive
	// connection left idle.
	ReadTimeout  time.Duration `yaml:"read_timeout" env:"EVENTCENTER_HTTP_READ_TIMEOUT"`
	WriteTimeout time.Duration `yaml:"write_timeout" env:"EVENTCENTER_HTTP_WRITE_TIMEOUT"`
	IdleTimeout  time.Duration `yaml:"idle_timeout" env:"EVENTCENTER_HTTP_IDLE_TIMEOUT"`
	// MaxConcurrent caps the admin API and console requests served at
	// once; more are answered 503 (/metrics and the probes are not capped).
	MaxConcurrent int `yaml:"max_concurrent" env:"EVENTCENTER_HTTP_MAX_CONCURRENT"`
}

// validateHTTP checks http: the listen address, timeouts and the request cap.
func (c *Config) validateHTTP(bad func(string, string, ...any)) {
	if c.HTTP.Listen == "" {
		bad("http.listen", "is required (host:port)")
	} else if err := checkListen(c.HTTP.Listen); err != nil {
		bad("http.listen", "%v", err)
	}
	for _, d := range []struct {
		f string
		d time.Duration
	}{{"http.read_timeout", c.HTTP.ReadTimeout}, {"http.write_timeout", c.HTTP.WriteTimeout}, {"http.idle_timeout", c.HTTP.IdleTimeout}} {
		if d.d <= 0 {
			bad(d.f, "must be positive, got %s", d.d)
		}
	}
	if c.HTTP.MaxConcurrent < 1 {
		bad("http.max_concurrent", "must be at least 1")
	}
}

// checkListen accepts a listen address host:port (host may be empty: all
// interfaces) with a numeric port from 0 (any free port) to 65535.
func checkListen(a string) error {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not host:port (want e.g. 127.0.0.1:8080 or :8080)", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q must be a number from 0 to 65535", a, port)
	}
	return nil
}

// LoopbackListen tells whether a listen address (host:port) accepts
// connections from this host only: localhost, 127.0.0.0/8 or ::1. An empty
// host listens on every interface.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
