package center

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/producerapi"
)

// defaultSecretCheck is how often secret files are looked at for changes.
const defaultSecretCheck = 10 * time.Second

// secrets keeps the secrets read from files (admin.tokens[].token_file,
// ingress.tokens[].token_file, checkback.biz[].secret_file) current: it re-reads them on SIGHUP and
// when a file's size or modification time changes. A file that cannot be
// read or is empty leaves the previous value in force (logged, counted).
// Values are never logged: only the key and the file name.
type secrets struct {
	cfg      config.Config
	log      *slog.Logger
	interval time.Duration
	errors   prometheus.Counter
	reloads  prometheus.Counter

	tokens atomic.Pointer[[]admin.Token]
	// producer are the producer API's tokens.
	producer atomic.Pointer[[]producerapi.Token]
	biz      sync.Map // bizID → *atomic.Pointer[string]
	seen     map[string]fileStamp

	stop chan struct{}
	done chan struct{}
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func newSecrets(cfg config.Config, log *slog.Logger, interval time.Duration, reg prometheus.Registerer) *secrets {
	s := &secrets{cfg: cfg, log: log, interval: interval, seen: map[string]fileStamp{},
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_secret_reload_errors_total",
			Help: "Secret files (token_file, secret_file) that could not be re-read; the previous value stays in force.",
		}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_secret_reloads_total",
			Help: "Secret files re-read after they changed or on SIGHUP.",
		}),
	}
	if s.interval <= 0 {
		s.interval = defaultSecretCheck
	}
	reg.MustRegister(s.errors, s.reloads)
	ts := adminTokens(cfg)
	s.tokens.Store(&ts)
	pts := producerTokens(cfg)
	s.producer.Store(&pts)
	for _, b := range cfg.Checkback.Biz {
		p := &atomic.Pointer[string]{}
		v := b.Secret
		p.Store(&v)
		s.biz.Store(b.BizID, p)
	}
	s.stampAll()
	return s
}

func adminTokens(cfg config.Config) []admin.Token {
	out := make([]admin.Token, 0, len(cfg.Admin.Tokens))
	for _, t := range cfg.Admin.Tokens {
		out = append(out, admin.Token{Name: t.Name, Token: t.Token, Scope: t.Scope})
	}
	return out
}

func producerTokens(cfg config.Config) []producerapi.Token {
	out := make([]producerapi.Token, 0, len(cfg.Ingress.Tokens))
	for _, t := range cfg.Ingress.Tokens {
		out = append(out, producerapi.Token{Name: t.Name, Token: t.Token, BizIDs: t.BizIDs, Rate: t.Rate, Burst: t.Burst})
	}
	return out
}

// ProducerTokens is the producer API's TokenSource.
func (s *secrets) ProducerTokens() []producerapi.Token { return *s.producer.Load() }

// Tokens is the admin handler's TokenSource.
func (s *secrets) Tokens() []admin.Token { return *s.tokens.Load() }

// BizSecret is the check-back secret source of bizID.
func (s *secrets) BizSecret(bizID string) func() string {
	return func() string {
		p, ok := s.biz.Load(bizID)
		if !ok {
			return ""
		}
		return *p.(*atomic.Pointer[string]).Load()
	}
}

// files lists the secret files and their keys.
func (s *secrets) files() map[string]string {
	out := map[string]string{}
	for i, t := range s.cfg.Admin.Tokens {
		if t.TokenFile != "" {
			out[fmt.Sprintf("admin.tokens[%d].token_file", i)] = t.TokenFile
		}
	}
	for i, t := range s.cfg.Ingress.Tokens {
		if t.TokenFile != "" {
			out[fmt.Sprintf("ingress.tokens[%d].token_file", i)] = t.TokenFile
		}
	}
	for i, b := range s.cfg.Checkback.Biz {
		if b.SecretFile != "" {
			out[fmt.Sprintf("checkback.biz[%d].secret_file", i)] = b.SecretFile
		}
	}
	return out
}

func (s *secrets) stampAll() bool {
	changed := false
	for _, path := range s.files() {
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		st := fileStamp{fi.Size(), fi.ModTime()}
		if s.seen[path] != st {
			changed = true
		}
		s.seen[path] = st
	}
	return changed
}

// reload re-reads every secret file; a file that fails keeps its value.
func (s *secrets) reload(why string) {
	tokens := append([]admin.Token(nil), *s.tokens.Load()...)
	for i, t := range s.cfg.Admin.Tokens {
		if t.TokenFile == "" || i >= len(tokens) {
			continue
		}
		if v, ok := s.read(fmt.Sprintf("admin.tokens[%d].token_file", i), t.TokenFile); ok {
			tokens[i].Token = v
		}
	}
	s.tokens.Store(&tokens)
	producer := append([]producerapi.Token(nil), *s.producer.Load()...)
	for i, t := range s.cfg.Ingress.Tokens {
		if t.TokenFile == "" || i >= len(producer) {
			continue
		}
		if v, ok := s.read(fmt.Sprintf("ingress.tokens[%d].token_file", i), t.TokenFile); ok {
			producer[i].Token = v
		}
	}
	s.producer.Store(&producer)
	for i, b := range s.cfg.Checkback.Biz {
		if b.SecretFile == "" {
			continue
		}
		if v, ok := s.read(fmt.Sprintf("checkback.biz[%d].secret_file", i), b.SecretFile); ok {
			p, _ := s.biz.Load(b.BizID)
			p.(*atomic.Pointer[string]).Store(&v)
		}
	}
	s.reloads.Inc()
	s.log.Info("secret files re-read", "why", why)
}

func (s *secrets) read(key, path string) (string, bool) {
	v, err := config.ReadSecretFile(path)
	if err != nil || len(v) < 16 && (strings.HasPrefix(key, "admin.") || strings.HasPrefix(key, "ingress.")) {
		if err == nil {
			err = fmt.Errorf("%s: a token must be at least 16 characters", path)
		}
		s.errors.Inc()
		s.log.Warn("secret file not re-read; the previous value stays", "key", key, "err", err)
		return "", false
	}
	return v, true
}

// Start watches the files until Stop.
func (s *secrets) Start(context.Context) error {
	if len(s.files()) == 0 {
		return nil
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer close(s.done)
		defer signal.Stop(hup)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-hup:
				s.stampAll()
				s.reload("SIGHUP")
			case <-t.C:
				if s.stampAll() {
					s.reload("file changed")
				}
			}
		}
	}()
	return nil
}

// Stop ends the watch.
func (s *secrets) Stop(context.Context) error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	return nil
}

// bearerOK reports whether r carries one of the admin tokens (any scope):
// then /readyz may say what is wrong in detail.
func (s *secrets) bearerOK(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return false
	}
	found := false
	for _, t := range s.Tokens() {
		if subtle.ConstantTimeCompare([]byte(t.Token), []byte(strings.TrimSpace(tok))) == 1 {
			found = true
		}
	}
	return found
}

// storePassword sets the PostgreSQL password from store.password_file (read
// for every new connection, so a rotated password needs no restart) or
// EVENTCENTER_STORE_PASSWORD.
func storePassword(pcfg *pgxpool.Config, cfg config.Store) error {
	if cfg.PasswordFile == "" && cfg.Password == "" {
		return nil
	}
	p, err := cfg.StorePassword()
	if err != nil {
		return err
	}
	pcfg.ConnConfig.Password = p
	if cfg.PasswordFile != "" {
		pcfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
			p, err := cfg.StorePassword()
			if err != nil {
				return err
			}
			cc.Password = p
			return nil
		}
	}
	return nil
}
