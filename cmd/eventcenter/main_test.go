package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	// The RocketMQ client (linked in for the rocketmq target) starts
	// package-level goroutines.
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot(&out, &out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	require.NoError(t, err)
	require.Contains(t, out, "eventcenter dev (commit unknown")
}

func TestServeRejectsABadConfigNamingTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ec.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: oracle\n"), 0o600))
	out, err := run(t, "serve", "--config", path)
	require.Error(t, err)
	require.Contains(t, out, "store.driver")
}

func TestServeRejectsAMissingConfig(t *testing.T) {
	out, err := run(t, "serve", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
	require.Contains(t, out, "read config")
}

func TestMigrateSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ec.yaml")
	db := filepath.Join(dir, "ec.db")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: sqlite\n  dsn: "+db+"\n"), 0o600))
	out, err := run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "migrated sqlite store")
	_, err = os.Stat(db)
	require.NoError(t, err)
}

func TestDevConfigLayers(t *testing.T) {
	dir := t.TempDir()
	override := filepath.Join(dir, "dev.yaml")
	require.NoError(t, os.WriteFile(override, []byte("checkback:\n  first_delay: 2s\n"), 0o600))
	t.Setenv("EVENTCENTER_FORWARD_MAX_ATTEMPTS", "7")
	f := devFlags{dataDir: dir, allow: []string{"http://127.0.0.1:8090"}, configPath: override}
	f.logLevel = "debug"
	cfg, err := devConfig(f, []string{"127.0.0.1:9092"})
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, "sqlite", cfg.Store.Driver)
	require.Equal(t, filepath.Join(dir, "eventcenter.db"), cfg.Store.DSN)
	require.True(t, cfg.Admin.Insecure)
	require.Equal(t, 2*time.Second, cfg.Checkback.FirstDelay, "the file beats the dev defaults")
	require.Equal(t, 7, cfg.Forward.MaxAttempts, "the environment beats the file")
	require.Equal(t, "debug", cfg.Log.Level, "flags beat the environment")
}

func TestHealthcheckFailsWithoutAServer(t *testing.T) {
	_, err := run(t, "healthcheck", "--url", "http://127.0.0.1:1/healthz")
	require.ErrorContains(t, err, "healthcheck")
}

// TestDevWelcomeConsumeCommandExits checks the kcat consume command dev
// prints: it reads orders.events from the beginning and exits at its end
// (-e), like the README's, instead of waiting forever for more.
func TestDevWelcomeConsumeCommandExits(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Store = config.Store{Driver: "sqlite", DSN: "/tmp/dev/eventcenter.db"}
	var out bytes.Buffer
	printWelcome(&out, cfg, "/tmp/dev", "127.0.0.1:8080", "", "")
	var consume string
	for line := range strings.Lines(out.String()) {
		if strings.Contains(line, "kcat -C") {
			consume = strings.TrimSpace(line)
		}
	}
	require.NotEmpty(t, consume, "no consume command in:\n%s", out.String())
	require.Equal(t, `kcat -C -b 127.0.0.1:9092 -t orders.events -o beginning -e -f 'key=%k headers=%h value=%s\n'`, consume)
}

// TestDevCreatesTopics: dev creates its topics (kafka.create_topics on,
// --partitions for the control topic) unless the file or environment says
// otherwise; serve's default stays off.
func TestDevCreatesTopics(t *testing.T) {
	f := devFlags{dataDir: t.TempDir(), partitions: 6}
	cfg, err := devConfig(f, []string{"127.0.0.1:9092"})
	require.NoError(t, err)
	require.True(t, cfg.Kafka.CreateTopics)
	require.Equal(t, 6, cfg.Kafka.ControlPartitions)
	require.False(t, config.Default().Kafka.CreateTopics, "serve does not create topics by default")

	t.Setenv("EVENTCENTER_KAFKA_CREATE_TOPICS", "false")
	cfg, err = devConfig(f, []string{"127.0.0.1:9092"})
	require.NoError(t, err)
	require.False(t, cfg.Kafka.CreateTopics, "the environment beats the dev default")
}

// Negative counts and durations are refused, naming the flag, before the
// command does anything (dev would start a broker).
func TestNegativeFlagsAreErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"dev", "--data-dir", dir, "--partitions", "-3"}, "--partitions: must be at least 1, got -3"},
		{[]string{"dev", "--data-dir", dir, "--partitions", "0"}, "--partitions: must be at least 1, got 0"},
		{[]string{"admin", "list", "--limit", "-1"}, "--limit: must not be negative, got -1"},
		{[]string{"dev", "--data-dir", dir, "--partitions", "100000"}, "--partitions: must be 1 to 1000 (the most instances that can share the control topic), got 100000"},
		{[]string{"admin", "counts", "--server", "127.0.0.1:8080"}, `--server: admin server "127.0.0.1:8080": want http://host:port or https://host:port (did you mean http://127.0.0.1:8080?)`},
		{[]string{"admin", "counts", "--server", "localhost:8080"}, `--server: admin server "localhost:8080": want http://host:port or https://host:port (did you mean http://localhost:8080?)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// Bounded: without the check, dev would run until cancelled.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			root := newRoot(io.Discard, io.Discard)
			root.SetArgs(tc.args)
			require.EqualError(t, root.ExecuteContext(ctx), tc.msg)
		})
	}
}

// serve, migrate and dev check the whole configuration before they touch
// the database or Kafka: the error names the YAML path, not a failed
// connection, and dev leaves no broker data or SQLite file behind.
func TestConfigCheckedBeforeStoreAndKafka(t *testing.T) {
	dir := t.TempDir()
	bad := "checkback:\n  allow: [\"ftp://h\"]\n"
	pgBad := filepath.Join(dir, "pg.yaml")
	require.NoError(t, os.WriteFile(pgBad, []byte(bad+"store:\n  driver: postgres\n  dsn: postgres://nobody@127.0.0.1:1/x?connect_timeout=1\n  auto_migrate: true\n"), 0o600))
	devBad := filepath.Join(dir, "dev.yaml")
	require.NoError(t, os.WriteFile(devBad, []byte(bad), 0o600))
	data := filepath.Join(dir, "data")
	for _, args := range [][]string{
		{"serve", "--config", pgBad},
		{"migrate", "--config", pgBad},
		{"dev", "--config", devBad, "--data-dir", data, "--kafka-addr", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			root := newRoot(io.Discard, io.Discard)
			root.SetArgs(args)
			err := root.ExecuteContext(ctx)
			require.ErrorContains(t, err, `checkback.allow[0]: "ftp://h"`)
			require.NotContains(t, err.Error(), "connect")
		})
	}
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	require.Empty(t, entries, "dev started nothing")
}

// The product binary has no RocketMQ stand-in: dev --rocketmq says how to
// get one before it starts anything.
func TestDevRocketMQNeedsTheBuildTag(t *testing.T) {
	if haveRocketMQStandIn {
		t.Skip("built with -tags rocketmqfake")
	}
	data := filepath.Join(t.TempDir(), "data")
	_, err := run(t, "dev", "--rocketmq", "--data-dir", data, "--kafka-addr", "127.0.0.1:0")
	require.ErrorContains(t, err, "-tags rocketmqfake")
	_, statErr := os.Stat(data)
	require.True(t, os.IsNotExist(statErr), "dev started nothing")
}

// The banner never prints a password, whatever the store, and names the
// real driver; the stop line names the data directory, not the DSN.
func TestDevWelcomeRedactsTheStoreDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store config.Store
		label string
		shown string
	}{
		{config.Store{Driver: "postgres", DSN: "postgres://ec:s3cretpw@db:5432/ec?sslmode=disable"}, "Store (PostgreSQL):", "postgres://ec:xxxxx@db:5432/ec?sslmode=disable"},
		{config.Store{Driver: "postgres", DSN: "postgres://ec@db/ec?password=s3cretpw"}, "Store (PostgreSQL):", "postgres://ec@db/ec?password=xxxxx"},
		{config.Store{Driver: "postgres", DSN: "host=db user=ec password='s3cretpw' dbname=ec"}, "Store (PostgreSQL):", "host=db user=ec password=xxxxx dbname=ec"},
		{config.Store{Driver: "postgres", DSN: "postgres://ec:s3c#retpw@db/ec"}, "Store (PostgreSQL):", "postgres://ec:xxxxx@db/ec"},
		{config.Store{Driver: "mysql", DSN: "ec:s3cretpw@tcp(db:3306)/ec"}, "Store (MySQL):", "ec:xxxxx@tcp(db:3306)/ec"},
		{config.Store{Driver: "sharded", Shards: []config.StoreShard{{DSN: "postgres://a:s3cretpw@h1/ec"}, {DSN: "postgres://b:s3cretpw@h2/ec"}}}, "Store (sharded PostgreSQL):", "postgres://a:xxxxx@h1/ec, postgres://b:xxxxx@h2/ec"},
		{config.Store{Driver: "sqlite", DSN: "/tmp/dev/eventcenter.db"}, "Store (SQLite):", "/tmp/dev/eventcenter.db"},
	} {
		cfg := config.Default()
		cfg.Store = tc.store
		var out bytes.Buffer
		printWelcome(&out, cfg, "/tmp/dev", "127.0.0.1:8080", "", "")
		require.NotContains(t, out.String(), "s3c", "a password is printed:\n%s", out.String())
		require.Regexp(t, regexp.QuoteMeta(tc.label)+" +"+regexp.QuoteMeta(tc.shown)+"\n", out.String())
		require.Contains(t, out.String(), "Press Ctrl-C to stop (")
		if tc.store.Driver != "sqlite" {
			require.NotContains(t, out.String(), "Store (SQLite)")
			require.Contains(t, out.String(), "the broker's data stays in /tmp/dev, the messages in the "+config.DriverName(tc.store.Driver)+" store")
		} else {
			require.Contains(t, out.String(), "(the data stays in /tmp/dev)")
		}
	}
}

// serve refuses an http.listen it could not bind before it dials Kafka or
// opens the store: the error names the YAML path.
func TestServeChecksHTTPListenFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ec.yaml")
	require.NoError(t, os.WriteFile(path, []byte("http:\n  listen: 127.0.0.1:99999\nkafka:\n  brokers: [\"127.0.0.1:1\"]\nstore:\n  driver: postgres\n  dsn: postgres://nobody@127.0.0.1:1/x?connect_timeout=1\n"), 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	root := newRoot(io.Discard, io.Discard)
	root.SetArgs([]string{"serve", "--config", path})
	err := root.ExecuteContext(ctx)
	require.ErrorContains(t, err, `http.listen: "127.0.0.1:99999": port "99999" must be a number from 0 to 65535`)
	require.NotContains(t, err.Error(), "connect")
}

// The banner's kcat PREPARE decodes as a PREPARE with a forward key: the
// forwarded record has key o-1 (without ec-fkey it had none).
func TestDevWelcomePrepareHasAForwardKey(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Store = config.Store{Driver: "sqlite", DSN: "/tmp/dev/eventcenter.db"}
	var out bytes.Buffer
	printWelcome(&out, cfg, "/tmp/dev", "127.0.0.1:8080", "", "")
	var prepare string
	for line := range strings.Lines(out.String()) {
		if strings.Contains(line, "ec-type=prepare") {
			prepare = line
		}
	}
	require.NotEmpty(t, prepare, out.String())
	rec := envelope.Record{Value: []byte("hello")}
	fields := strings.Fields(prepare)
	for i, f := range fields {
		switch {
		case f == "-k":
			rec.Key = []byte(strings.Trim(fields[i+1], "'"))
		case f == "-H":
			k, v, ok := strings.Cut(fields[i+1], "=")
			require.True(t, ok, fields[i+1])
			rec.Headers = append(rec.Headers, envelope.Header{Key: k, Value: []byte(v)})
		}
	}
	e, err := envelope.Decoder{}.Decode(rec)
	require.NoError(t, err)
	require.Equal(t, envelope.Prepare, e.Type)
	require.Equal(t, "orders.events", e.ForwardTopic)
	require.Equal(t, "o-1", e.ForwardKey)
}

// A bad --http-listen is named as the flag.
func TestDevNamesABadHTTPListenFlag(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	_, err := run(t, "dev", "--data-dir", data, "--kafka-addr", "127.0.0.1:0", "--http-listen", "127.0.0.1")
	require.ErrorContains(t, err, `http.listen (from --http-listen): "127.0.0.1" is not host:port`)
}

// dev (insecure: no tokens) on an address other hosts reach is refused
// before anything starts, naming the fix; it used to serve the admin API
// to the network with one warning line.
func TestDevRefusesANetworkListenAddress(t *testing.T) {
	dir := t.TempDir()
	_, err := run(t, "dev", "--data-dir", dir, "--kafka-addr", "127.0.0.1:0", "--http-listen", "0.0.0.0:8081")
	require.ErrorContains(t, err, "admin.insecure")
	require.ErrorContains(t, err, "configure admin.tokens, or listen on 127.0.0.1")
	_, statErr := os.Stat(filepath.Join(dir, "eventcenter.db"))
	require.True(t, os.IsNotExist(statErr), "nothing was created")
}
