package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Machine describes where the run happened.
type Machine struct {
	CPUs       int    `json:"cpus"`
	MemTotalMB int    `json:"mem_total_mb"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Postgres   string `json:"postgres,omitempty"`
	MySQL      string `json:"mysql,omitempty"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the start and the end
	// of the center phase: other work on the machine skews the figures.
	LoadAvgStart float64 `json:"loadavg_start"`
	LoadAvgEnd   float64 `json:"loadavg_end"`
}

func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(data), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				m.MemTotalMB = kb / 1024
			}
		}
	}
	return m
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withSearchPath adds "options=-c search_path=schema" to a postgres:// URL.
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse dsn: %w", err)
	}
	q := u.Query()
	opt := "-c search_path=" + schema
	if o := q.Get("options"); o != "" {
		opt = o + " " + opt
	}
	q.Set("options", opt)
	// pgx does not read '+' as a space.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String(), nil
}

// appName is the application_name of the center's PostgreSQL connections
// (to find its backends' CPU time).
func appName(runID string) string { return "ecbench_" + runID }

// withAppName sets application_name in a postgres:// URL.
func withAppName(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse dsn: %w", err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String(), nil
}

// pgExec runs statements on a fresh connection to dsn.
func pgExec(ctx context.Context, dsn string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func pgVersion(ctx context.Context, dsn string) string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return ""
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var v string
	_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v
}

// freshSchema creates a schema and returns a DSN using it and a function
// dropping it.
func freshSchema(ctx context.Context, dsn, schema string) (string, func(), error) {
	if err := pgExec(ctx, dsn, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = pgExec(dctx, dsn, "DROP SCHEMA "+schema+" CASCADE")
	}
	sdsn, err := withSearchPath(dsn, schema)
	if err != nil {
		drop()
		return "", nil, err
	}
	return sdsn, drop, nil
}

// createTopics creates the topics that do not exist yet with partitions,
// a retention and small segments (so that kfake, which keeps records in
// memory, can drop old ones in long runs).
func createTopics(ctx context.Context, brokers []string, partitions int, retention time.Duration, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	existing, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	ms := strconv.FormatInt(retention.Milliseconds(), 10)
	// Small segments: kfake frees a segment only when all of it expired
	// (its default is 100 MB per partition).
	seg := strconv.Itoa(4 << 20)
	for _, t := range topics {
		if existing.Has(t) {
			continue
		}
		resp, err := adm.CreateTopic(ctx, int32(partitions), 1, map[string]*string{"retention.ms": &ms, "segment.bytes": &seg}, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	return nil
}

func deleteTopics(ctx context.Context, brokers []string, topics ...string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
}
