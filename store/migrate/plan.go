package migrate

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress is one report on a long statement (a concurrent index build).
type Progress struct {
	Version int
	Name    string
	// Index is the index being built.
	Index string
	// Phase is the server's name for the current phase (PostgreSQL's
	// pg_stat_progress_create_index.phase), or "" before it reported one.
	Phase string
	// BlocksDone/BlocksTotal and TuplesDone/TuplesTotal are the phase's
	// counters (0 when the phase does not count them).
	BlocksDone, BlocksTotal int64
	TuplesDone, TuplesTotal int64
	// Elapsed since the statement started.
	Elapsed time.Duration
	// Done is set on the last report of a statement.
	Done bool
}

// PlanStep is a pending migration as `eventcenter migrate --plan` shows it.
type PlanStep struct {
	Version       int
	Name          string
	NoTransaction bool
	Statements    []PlanStatement
}

// PlanStatement is one statement of a pending step and what it locks.
type PlanStatement struct {
	// SQL is the statement's first line.
	SQL string
	// Table is the existing table it works on ("" for none).
	Table string
	// Lock says which lock it takes and what that lock blocks.
	Lock string
	// Blocks is set when the lock blocks writes for the statement's whole
	// duration (not just for an instant).
	Blocks bool
	// Rows and Bytes are the table's estimated rows and total size (with
	// indexes); Estimate is the expected duration derived from them, 0
	// when the statement does not scale with the table.
	Rows     int64
	Bytes    int64
	Estimate time.Duration
}

// WritePlan prints the pending steps of one store for an operator.
func WritePlan(w io.Writer, store string, current, latest int, steps []PlanStep) error {
	var b strings.Builder
	if len(steps) == 0 {
		fmt.Fprintf(&b, "%s: schema version %d, nothing to apply\n", store, current)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%s: schema version %d, this binary's is %d; %d pending step(s):\n", store, current, latest, len(steps))
	for _, s := range steps {
		how := "one transaction"
		if s.NoTransaction {
			how = "outside a transaction, statement by statement"
		}
		fmt.Fprintf(&b, "  %04d %s (%s)\n", s.Version, s.Name, how)
		for _, st := range s.Statements {
			fmt.Fprintf(&b, "    %s\n", st.SQL)
			verdict := "online"
			if st.Blocks {
				verdict = "BLOCKS WRITES"
			}
			fmt.Fprintf(&b, "      locks: %s [%s]\n", st.Lock, verdict)
			if st.Table != "" {
				fmt.Fprintf(&b, "      table %s: ~%d rows, %s", st.Table, st.Rows, bytesText(st.Bytes))
				if st.Estimate > 0 {
					fmt.Fprintf(&b, "; expected to take ~%s", roundEstimate(st.Estimate))
				}
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func roundEstimate(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(10 * time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
