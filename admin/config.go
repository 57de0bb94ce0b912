package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/admin/adminapi"
)

// Token scopes.
const (
	// ScopeRead may read messages, counts and the dead-letter topic.
	ScopeRead = "read"
	// ScopeAdmin may also act: resolve, redeliver, retry, replay.
	ScopeAdmin = "admin"
)

// Token is one bearer token.
type Token struct {
	// Name identifies the holder; it is written as "who" in audit records.
	Name string `yaml:"name" json:"name"`
	// Token is the secret the holder sends as "Authorization: Bearer ...".
	Token string `yaml:"token" json:"token"`
	// Scope is "read" or "admin".
	Scope string `yaml:"scope" json:"scope"`
}

// LaneDLQ is the dead-letter topic of one extra lane.
type LaneDLQ struct {
	// Lane is the lane's name (config kafka.lanes[].name).
	Lane string
	// DLQ reads the lane's dead-letter topic and replays to the lane's
	// control topic.
	DLQ DLQ
}

// Config configures the admin handler.
type Config struct {
	// Tokens are the accepted bearer tokens. With none, every request is
	// refused unless Insecure is set.
	Tokens []Token
	// TokenSource, when set, gives the accepted tokens at each request in
	// place of Tokens (tokens read from files that may be rotated); Tokens
	// still decides whether the API is open (Insecure).
	TokenSource func() []Token
	// Insecure opens the API and the console without a token when no token
	// is configured (development only). Actions are audited as
	// InsecureUser. It has no effect when tokens are configured.
	Insecure bool
	// InsecureUser is "who" for actions in insecure mode (default "anonymous").
	InsecureUser string

	// StuckAfter is the age from which a PREPARED message is listed as stuck
	// on the console (default 5m).
	StuckAfter time.Duration
	// SessionTTL is how long a console login lasts (default 12h).
	SessionTTL time.Duration
	// DefaultLimit and MaxLimit bound list pages (defaults 50 and 1000).
	DefaultLimit int
	MaxLimit     int
	// DLQPreviewBytes is the most bytes of a dead letter's value (and of
	// each header value) a DLQ list shows (default 1024); the whole
	// record is read one at a time.
	DLQPreviewBytes int
	// DLQPageBytes bounds a DLQ list page by the whole size of its records
	// (key, value, headers): the page ends before the record that would
	// pass it, the first record excepted (default 4 MiB).
	DLQPageBytes int

	// DifferingPrepares, when set, gives per bizID the duplicate PREPAREs
	// with a different body the ingester ignored (ingest's
	// DifferingPrepares); counts and the console show them.
	DifferingPrepares func() map[string]int64

	// Forwarding, when set, gives this center's forwarder view per bizID
	// (weights, limits, in flight, send rate, throttled) for the
	// fair-share page and GET /api/v1/bizids, joined with the store's send
	// backlog (store.Backlogger).
	Forwarding func() []adminapi.BizForwarding
	// Checkbacks, when set, gives this center's check-back view per
	// bizID (limits, waiting, running, throttled), keyed by bizID, for
	// the same page.
	Checkbacks func() map[string]adminapi.BizCheckback
	// Targets, when set, gives this center's forward targets and their
	// broker throttles, for the same page.
	Targets func() []adminapi.TargetThrottle
	// Registries, when set, gives this center's check-back registries
	// (GET /api/v1/registries).
	Registries func() []adminapi.CheckbackRegistry

	// LaneDLQs are the dead-letter topics of the center's extra lanes
	// (kafka.lanes), one per lane; the DLQ given to NewHandler is the
	// default lane's. The dead-letter endpoints and pages choose one with
	// ?lane=NAME (absent or empty: the default lane).
	LaneDLQs []LaneDLQ

	// Trends, when set, gives the overview its charts of the last hour
	// (admin/trends.Sampler).
	Trends Trends

	// Now is the clock (nil → time.Now).
	Now func() time.Time
	// Logger (nil → slog.Default()).
	Logger *slog.Logger
	// Registerer receives eventcenter_admin_actions_total{action,result}
	// (nil → not registered).
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.InsecureUser == "" {
		c.InsecureUser = "anonymous"
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = 5 * time.Minute
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.DefaultLimit == 0 {
		c.DefaultLimit = 50
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = 1000
	}
	if c.DLQPreviewBytes == 0 {
		c.DLQPreviewBytes = 1024
	}
	if c.DLQPageBytes == 0 {
		c.DLQPageBytes = 4 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	var errs []error
	names := map[string]bool{}
	secrets := map[string]bool{}
	for i, t := range c.Tokens {
		switch {
		case strings.TrimSpace(t.Name) == "":
			errs = append(errs, fmt.Errorf("Tokens[%d].Name: empty", i))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("Tokens[%d].Name: %q used twice", i, t.Name))
		}
		names[t.Name] = true
		switch {
		case len(t.Token) < 16:
			errs = append(errs, fmt.Errorf("Tokens[%d].Token (%s): shorter than 16 characters", i, t.Name))
		case secrets[t.Token]:
			errs = append(errs, fmt.Errorf("Tokens[%d].Token (%s): same secret as another token", i, t.Name))
		}
		secrets[t.Token] = true
		if t.Scope != ScopeRead && t.Scope != ScopeAdmin {
			errs = append(errs, fmt.Errorf("Tokens[%d].Scope (%s): %q, want %q or %q", i, t.Name, t.Scope, ScopeRead, ScopeAdmin))
		}
	}
	if c.StuckAfter < 0 {
		errs = append(errs, errors.New("StuckAfter: negative"))
	}
	if c.SessionTTL < 0 {
		errs = append(errs, errors.New("SessionTTL: negative"))
	}
	if c.DLQPreviewBytes < 0 || c.DLQPageBytes < 0 {
		errs = append(errs, fmt.Errorf("DLQPreviewBytes/DLQPageBytes: %d/%d, negative", c.DLQPreviewBytes, c.DLQPageBytes))
	}
	lanes := map[string]bool{}
	for i, l := range c.LaneDLQs {
		switch {
		case strings.TrimSpace(l.Lane) == "" || l.Lane != strings.TrimSpace(l.Lane) || badText(l.Lane):
			errs = append(errs, fmt.Errorf("LaneDLQs[%d].Lane: %q, want a lane name", i, l.Lane))
		case lanes[l.Lane]:
			errs = append(errs, fmt.Errorf("LaneDLQs[%d].Lane: %q used twice", i, l.Lane))
		}
		lanes[l.Lane] = true
		if l.DLQ == nil {
			errs = append(errs, fmt.Errorf("LaneDLQs[%d].DLQ (%s): nil", i, l.Lane))
		}
	}
	if c.DefaultLimit < 0 || c.MaxLimit < 0 || (c.MaxLimit > 0 && c.DefaultLimit > c.MaxLimit) {
		errs = append(errs, fmt.Errorf("DefaultLimit/MaxLimit: %d/%d, want 0 < DefaultLimit <= MaxLimit", c.DefaultLimit, c.MaxLimit))
	}
	return errors.Join(errs...)
}
