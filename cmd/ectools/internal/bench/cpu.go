package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// Linux for every architecture the center runs on).
const clockTicks = 100

// CPUUsage is the CPU time spent during the center phase, from /proc, and
// per forwarded message.
type CPUUsage struct {
	// Process is this process: in the embedded mode the center, kfake and
	// the load generator together.
	ProcessSeconds  float64 `json:"process_seconds"`
	ProcessUsPerMsg float64 `json:"process_us_per_msg"`
	// PostgresBackends are the center's PostgreSQL connections (found by
	// their application_name), when the server runs on this machine.
	PostgresBackendsSeconds  float64 `json:"postgres_backends_seconds,omitempty"`
	PostgresBackendsUsPerMsg float64 `json:"postgres_backends_us_per_msg,omitempty"`
	// PostgresAll is every postgres process of the machine (background
	// writer, WAL writer, checkpointer, autovacuum, and other clients'
	// backends if any).
	PostgresAllSeconds  float64 `json:"postgres_all_seconds,omitempty"`
	PostgresAllUsPerMsg float64 `json:"postgres_all_us_per_msg,omitempty"`
	// PostgresProcesses is how many postgres processes were sampled at the
	// end of the phase (0: the server does not run on this machine).
	PostgresProcesses int `json:"postgres_processes,omitempty"`
	// Machine is all CPU time of the machine (/proc/stat, less idle and
	// iowait), other work included.
	MachineSeconds float64 `json:"machine_seconds"`
	// Parts splits ProcessSeconds into center, broker, load and runtime
	// (see CPUParts; nil when another CPU profile was running).
	Parts       *CPUParts `json:"parts,omitempty"`
	WallSeconds float64   `json:"wall_seconds"`
}

// procTicks returns utime+stime of a process, in clock ticks.
func procTicks(pid string) (int64, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	// The command may contain spaces: fields start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}

// machineTicks returns the machine's busy CPU time (all CPUs), in ticks.
func machineTicks() int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // steal and later (guest time is in user already)
			break
		}
		busy += n
	}
	return busy
}

// postgresPids returns the pids of every process named postgres.
func postgresPids() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// backendPids returns the pids of the server's connections with the
// application name.
func backendPids(ctx context.Context, dsn, app string) []string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make([]string, len(pids))
	for i, p := range pids {
		out[i] = fmt.Sprint(p)
	}
	return out
}

// cpuSample is the CPU counters at one moment.
type cpuSample struct {
	self     int64
	machine  int64
	backends map[string]int64 // by pid
	all      map[string]int64
}

// cpuMeter samples the counters at the start and the end of the center
// phase.
type cpuMeter struct {
	dsn, app string // PostgreSQL: where to find the center's backends
}

func (m cpuMeter) sample(ctx context.Context) cpuSample {
	s := cpuSample{machine: machineTicks(), backends: map[string]int64{}, all: map[string]int64{}}
	s.self, _ = procTicks("self")
	if m.dsn == "" {
		return s
	}
	for _, pid := range backendPids(ctx, m.dsn, m.app) {
		if t, ok := procTicks(pid); ok {
			s.backends[pid] = t
		}
	}
	for _, pid := range postgresPids() {
		if t, ok := procTicks(pid); ok {
			s.all[pid] = t
		}
	}
	return s
}

// usage is the CPU used between two samples, per forwarded message. A
// backend seen only at the end counts from zero (it was opened during the
// phase); one gone by the end is not counted.
func usage(a, b cpuSample, wall float64, forwarded int64) *CPUUsage {
	sec := func(ticks int64) float64 { return float64(ticks) / clockTicks }
	delta := func(start, end map[string]int64) int64 {
		var d int64
		for pid, t := range end {
			d += t - start[pid]
		}
		return d
	}
	u := &CPUUsage{ProcessSeconds: sec(b.self - a.self), MachineSeconds: sec(b.machine - a.machine), WallSeconds: wall}
	if len(b.backends) > 0 {
		u.PostgresBackendsSeconds = sec(delta(a.backends, b.backends))
	}
	if len(b.all) > 0 {
		u.PostgresAllSeconds = sec(delta(a.all, b.all))
		u.PostgresProcesses = len(b.all)
	}
	if forwarded > 0 {
		per := func(s float64) float64 { return s * 1e6 / float64(forwarded) }
		u.ProcessUsPerMsg = per(u.ProcessSeconds)
		u.PostgresBackendsUsPerMsg = per(u.PostgresBackendsSeconds)
		u.PostgresAllUsPerMsg = per(u.PostgresAllSeconds)
	}
	return u
}
