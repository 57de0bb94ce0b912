package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/store/sharded"
)

// Store is the database.
type Store struct {
	// Driver is "postgres", "mysql" (MySQL 8.0.1+ or MariaDB 10.6+) or
	// "sqlite".
	Driver string `yaml:"driver" env:"EVENTCENTER_STORE_DRIVER"`
	// DSN is a PostgreSQL URL, a MySQL DSN (user:password@tcp(host:3306)/dbname)
	// or a SQLite file path.
	DSN      string `yaml:"dsn" env:"EVENTCENTER_STORE_DSN"`
	MaxConns int    `yaml:"max_conns" env:"EVENTCENTER_STORE_MAX_CONNS"`
	// AutoMigrate applies migrations at start-up (dev); otherwise run
	// "eventcenter migrate" and the center checks the schema at start-up.
	AutoMigrate bool `yaml:"auto_migrate" env:"EVENTCENTER_STORE_AUTO_MIGRATE"`
	// Password and PasswordFile: see security.go.
	StoreSecrets `yaml:",inline"`
	// Shards, with Driver "sharded", spread the messages over several
	// PostgreSQL servers (store/sharded; docs/shards.md). MaxConns and
	// AutoMigrate apply to each shard; DSN is unused.
	Shards []StoreShard `yaml:"shards"`
}

// StoreShard is one shard of a sharded store.
type StoreShard struct {
	// DSN is the shard's PostgreSQL URL (the password in it, if any).
	DSN string `yaml:"dsn"`
	// Buckets lists the virtual buckets (0-1023) the shard holds, as
	// ranges: "0-511" or "0-99,200-299". Every bucket is held by exactly
	// one shard.
	Buckets string `yaml:"buckets"`
}

// validateStore checks store: the driver and its DSN or shards.
func (c *Config) validateStore(bad func(string, string, ...any)) {
	switch c.Store.Driver {
	case "postgres":
		if u, err := url.Parse(c.Store.DSN); c.Store.DSN == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad("store.dsn", "want a postgres:// URL, got %q", redact(c.Store.DSN))
		}
	case "mysql":
		if mc, err := gomysql.ParseDSN(c.Store.DSN); c.Store.DSN == "" || err != nil || mc.DBName == "" {
			bad("store.dsn", "want a MySQL DSN user:password@tcp(host:3306)/dbname, got %q", redactMySQL(c.Store.DSN))
		}
	case "sqlite":
		if c.Store.DSN == "" {
			bad("store.dsn", "want a SQLite file path")
		}
	case "sharded":
		validateShards(c.Store.Shards, bad)
	default:
		bad("store.driver", "want postgres, mysql, sqlite or sharded, got %q", c.Store.Driver)
	}
	if c.Store.Driver != "sharded" && len(c.Store.Shards) > 0 {
		bad("store.shards", "is for store.driver sharded only")
	}
	if c.Store.MaxConns < 1 {
		bad("store.max_conns", "must be at least 1")
	}
}

// redactMySQL hides the password of a MySQL DSN (everything before the
// last "@" when the DSN does not parse).
func redactMySQL(dsn string) string {
	mc, err := gomysql.ParseDSN(dsn)
	if err != nil {
		if i := strings.LastIndex(dsn, "@"); i >= 0 {
			return "xxxxx" + dsn[i:]
		}
		return dsn
	}
	if mc.Passwd != "" {
		mc.Passwd = "xxxxx"
	}
	return mc.FormatDSN()
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		// A password with characters a URL does not allow (#, /, ...)
		// makes the URL unparsable: hide what lies between "user:" and
		// the last "@".
		if i, j := strings.Index(dsn, "://"), strings.LastIndex(dsn, "@"); i >= 0 && j > i {
			userinfo := dsn[i+3 : j]
			if user, _, ok := strings.Cut(userinfo, ":"); ok {
				return redactKeywords(dsn[:i+3] + user + ":xxxxx" + dsn[j:])
			}
		}
		return redactKeywords(dsn)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if secretParam(k) {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if u.Scheme == "" && u.User == nil {
		// Not a URL (a file path, or PostgreSQL's keyword=value form).
		return redactKeywords(dsn)
	}
	return u.String()
}

// secretParam reports whether a DSN parameter holds a secret
// (PostgreSQL's password and sslpassword, and the like).
func secretParam(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "password") || strings.Contains(k, "passwd") || strings.Contains(k, "secret")
}

// keywordSecret matches "password=value" in a keyword=value DSN (the value
// possibly single-quoted).
var keywordSecret = regexp.MustCompile(`(?i)\b([a-z_]*(?:password|passwd|secret)[a-z_]*)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&;]*)`)

func redactKeywords(dsn string) string {
	return keywordSecret.ReplaceAllString(dsn, "${1}=xxxxx")
}

// RedactDSN returns dsn of the given store driver with every password
// replaced by xxxxx, for messages and banners: a PostgreSQL URL or
// keyword=value string, a MySQL DSN or a SQLite path (or file: URI).
func RedactDSN(driver, dsn string) string {
	if driver == "mysql" {
		return redactMySQL(dsn)
	}
	return redact(dsn)
}

// DriverName is the display name of a store driver: PostgreSQL, MySQL,
// SQLite, or "sharded PostgreSQL".
func DriverName(driver string) string {
	switch driver {
	case "postgres":
		return "PostgreSQL"
	case "mysql":
		return "MySQL"
	case "sqlite":
		return "SQLite"
	case "sharded":
		return "sharded PostgreSQL"
	}
	return driver
}

// Describe says where the store is, with passwords redacted: the DSN, or
// for a sharded store each shard's.
func (s Store) Describe() string {
	if s.Driver != "sharded" {
		return RedactDSN(s.Driver, s.DSN)
	}
	parts := make([]string, len(s.Shards))
	for i, sh := range s.Shards {
		parts[i] = RedactDSN("postgres", sh.DSN)
	}
	return strings.Join(parts, ", ")
}

// validateShards checks store.shards: PostgreSQL URLs, and every bucket
// held by exactly one shard.
func validateShards(shards []StoreShard, bad func(field, format string, args ...any)) {
	if len(shards) == 0 {
		bad("store.shards", "store.driver sharded needs at least one shard")
		return
	}
	if len(shards) > sharded.MaxShards {
		bad("store.shards", "at most %d shards, got %d", sharded.MaxShards, len(shards))
		return
	}
	specs := make([]string, len(shards))
	ok := true
	for i, sh := range shards {
		f := fmt.Sprintf("store.shards[%d]", i)
		if u, err := url.Parse(sh.DSN); sh.DSN == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad(f+".dsn", "want a postgres:// URL, got %q", redact(sh.DSN))
		}
		if _, err := sharded.ParseBuckets(sh.Buckets); err != nil {
			bad(f+".buckets", "%v", err)
			ok = false
		}
		specs[i] = sh.Buckets
	}
	if !ok {
		return
	}
	if _, err := sharded.NewMap(specs); err != nil {
		bad("store.shards", "%v", err)
	}
}
