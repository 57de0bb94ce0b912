package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// Minimum server versions: FOR UPDATE SKIP LOCKED (the claims) came with
// MySQL 8.0.1 and MariaDB 10.6, JSON_TABLE (the multi-row updates) with
// MySQL 8.0.4 and MariaDB 10.6.
const (
	MinMySQL   = "8.0.4"
	MinMariaDB = "10.6.0"
)

// OpenDB returns a connection pool on dsn (go-sql-driver's DSN,
// user:pass@tcp(host:3306)/db) set up as the store needs, whatever the DSN
// says about it: times as DATETIME in UTC to the microsecond (parseTime,
// loc=UTC, timeTruncate=1us), parameters
// interpolated by the driver (one round trip per statement instead of
// prepare, execute and close), rows affected counting the rows matched,
// and every session in READ COMMITTED (no gap locks between concurrent
// batches, as in PostgreSQL). It does no I/O; CheckSchema checks the server.
func OpenDB(dsn string) (*sql.DB, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysql dsn: no database name (user:pass@tcp(host:3306)/dbname)")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	cfg.MaxAllowedPacket = 0 // read the server's
	// Times as the columns keep them: a literal with nanoseconds is not
	// a DATETIME(6) value, and MariaDB then reads a whole index instead
	// of a range of it.
	if err := cfg.Apply(gomysql.TimeTruncate(time.Microsecond)); err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	db := sql.OpenDB(sessionConnector{conn})
	db.SetConnMaxLifetime(30 * time.Minute)
	return db, nil
}

// sessionConnector sets the isolation level on every new connection.
type sessionConnector struct{ driver.Connector }

func (c sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("mysql driver: connection cannot execute statements")
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("set isolation level: %w", err)
	}
	return conn, nil
}

// ErrOldServer is returned by CheckVersion for a server without FOR UPDATE
// SKIP LOCKED.
var ErrOldServer = errors.New("database server too old for the eventcenter store (needs MySQL " + MinMySQL + "+ or MariaDB " + MinMariaDB + "+)")

var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// CheckServerVersion checks a VERSION() string ("8.0.36",
// "10.11.6-MariaDB-0+deb12u1") against the minimum versions.
func CheckServerVersion(v string) error {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return fmt.Errorf("server version %q not understood: %w", v, ErrOldServer)
	}
	got := [3]int{}
	for i := range got {
		got[i], _ = strconv.Atoi(m[i+1])
	}
	mariadb := strings.Contains(strings.ToLower(v), "mariadb")
	want, name := [3]int{8, 0, 4}, "MySQL"
	if mariadb {
		want, name = [3]int{10, 6, 0}, "MariaDB"
	}
	for i := range got {
		if got[i] != want[i] {
			if got[i] < want[i] {
				return fmt.Errorf("found %s %s: %w", name, v, ErrOldServer)
			}
			return nil
		}
	}
	return nil
}

// CheckVersion reads the server's version and checks it (CheckServerVersion).
func CheckVersion(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return fmt.Errorf("check server version: %w", translate(err))
	}
	return CheckServerVersion(v)
}
