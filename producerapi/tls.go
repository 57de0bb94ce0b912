package producerapi

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSConfig serves the certificate and key in certFile and keyFile, re-read
// when either file changes (looked at, at most once a second, on new
// connections); a pair that does not load keeps the previous one in force
// (logged). The first load must succeed.
func TLSConfig(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	c := &certFiles{cert: certFile, key: keyFile, log: log, now: time.Now}
	if err := c.load(); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}, nil
}

type certFiles struct {
	cert, key string
	log       *slog.Logger
	now       func() time.Time

	mu      sync.Mutex
	current *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.Size(), fi.ModTime()}, nil
}

// load reads the pair; the caller holds mu (or owns c).
func (c *certFiles) load() error {
	s1, err1 := stampOf(c.cert)
	s2, err2 := stampOf(c.key)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("ingress.tls: %w", firstErr(err1, err2))
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return fmt.Errorf("ingress.tls: load %s and %s: %w", c.cert, c.key, err)
	}
	c.current, c.stamp = &pair, [2]fileStamp{s1, s2}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= time.Second {
		c.checked = now
		s1, err1 := stampOf(c.cert)
		s2, err2 := stampOf(c.key)
		if err1 == nil && err2 == nil && [2]fileStamp{s1, s2} != c.stamp {
			if err := c.load(); err != nil {
				c.stamp = [2]fileStamp{s1, s2} // logged once per change
				c.log.Warn("producer API certificate not re-read; the previous one stays", "err", err)
			} else {
				c.log.Info("producer API certificate re-read", "cert_file", c.cert)
			}
		}
	}
	return c.current, nil
}
