package center

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth/kafkaauthtest"
)

// pgBin holds initdb and pg_ctl; the test skips without them.
const pgBin = "/usr/lib/postgresql/15/bin"

// sslPostgres starts a throwaway PostgreSQL cluster with ssl=on (a
// certificate for "db.test" and 127.0.0.1 from p) and scram-sha-256
// password authentication for TCP, the superuser's password being
// password. It returns the port; the cluster stops at cleanup.
func sslPostgres(t *testing.T, p *kafkaauthtest.PKI, password string) int {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		t.Skipf("no PostgreSQL binaries in %s", pgBin)
	}
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	work, err := os.MkdirTemp("", "ec-pgssl-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	require.NoError(t, os.Chmod(work, 0o755))
	data := filepath.Join(work, "data")
	var runAs []string
	chown := func(string) {}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root needs a postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		runAs = []string{"runuser", "-u", "postgres", "--"}
		chown = func(path string) { require.NoError(t, os.Chown(path, uid, gid)) }
	}
	run := func(tool string, args ...string) {
		argv := append(append(append([]string{}, runAs...), filepath.Join(pgBin, tool)), args...)
		out, err := exec.CommandContext(t.Context(), argv[0], argv[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", tool, out)
	}
	pw := filepath.Join(work, "pw")
	require.NoError(t, os.WriteFile(pw, []byte(password+"\n"), 0o600))
	chown(pw)
	require.NoError(t, os.MkdirAll(data, 0o700))
	chown(data)
	run("initdb", "-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile="+pw, "-E", "UTF8", "--no-sync")
	cert, key := p.Issue(t, "db.test", time.Now().Add(time.Hour), x509.ExtKeyUsageServerAuth)
	for name, body := range map[string][]byte{"server.crt": cert, "server.key": key} {
		f := filepath.Join(data, name)
		require.NoError(t, os.WriteFile(f, body, 0o600))
		chown(f)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	logFile := filepath.Join(work, "log")
	require.NoError(t, os.WriteFile(logFile, nil, 0o644))
	chown(logFile)
	run("pg_ctl", "-D", data, "-w", "-t", "60", "-l", logFile, "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c ssl=on -c max_connections=20", port, data), "start")
	t.Cleanup(func() {
		argv := append(append([]string{}, runAs...), filepath.Join(pgBin, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
		_ = exec.Command(argv[0], argv[1:]...).Run()
	})
	return port
}

// TestPostgresVerifyFull connects to PostgreSQL with sslmode=verify-full,
// a CA file and the password from store.password_file (re-read for each new
// connection); an unknown CA, a host the certificate does not name and a
// wrong password each fail the connection with a clear error that shows
// no password.
func TestPostgresVerifyFull(t *testing.T) {
	t.Parallel()
	const password = "CANARY-pg-pw-51f0"
	p := kafkaauthtest.New(t)
	port := sslPostgres(t, p, password)
	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte(password+"\n"), 0o600))
	dsn := func(host, ca string) string {
		return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=verify-full&sslrootcert=%s&connect_timeout=5",
			net.JoinHostPort(host, strconv.Itoa(port)), url.QueryEscape(ca))
	}
	store := func(dsn string) config.Store {
		return config.Store{Driver: "postgres", DSN: dsn, MaxConns: 2, StoreSecrets: config.StoreSecrets{PasswordFile: pwFile}}
	}

	pool, err := NewPool(t.Context(), store(dsn("127.0.0.1", p.CAFile)))
	require.NoError(t, err)
	defer pool.Close()
	var ssl bool
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl))
	require.True(t, ssl, "the connection is encrypted")

	// A rotated password: the server's and the file's change; a new
	// connection reads the file again.
	_, err = pool.Exec(t.Context(), `ALTER USER postgres PASSWORD 'rotated-`+password+`'`)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pwFile, []byte("rotated-"+password+"\n"), 0o600))
	pool.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, pool.Ping(ctx), "a new connection with the rotated password")

	other := kafkaauthtest.New(t)
	for name, tc := range map[string]struct {
		cfg  config.Store
		want string
	}{
		"unknown CA":   {store(dsn("127.0.0.1", other.CAFile)), "certificate signed by unknown authority"},
		"wrong host":   {store(dsn("localhost", p.CAFile)), "not localhost"},
		"bad password": {config.Store{Driver: "postgres", DSN: dsn("127.0.0.1", p.CAFile), MaxConns: 1, StoreSecrets: config.StoreSecrets{Password: "wrong-" + password}}, "password authentication failed"},
		"no password file": {config.Store{Driver: "postgres", DSN: dsn("127.0.0.1", p.CAFile), MaxConns: 1,
			StoreSecrets: config.StoreSecrets{PasswordFile: "/nonexistent/pw"}}, "store.password_file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewPool(t.Context(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), password)
		})
	}
}
