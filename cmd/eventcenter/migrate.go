package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/store/migrate"
)

// progressPrinter shows the progress of long migration steps. On a
// terminal it redraws one line (done/total, rate, ETA); otherwise (a log
// file, CI) it prints one line per phase and one when the step is done.
type progressPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	phase    string
	prev     migrate.Progress
	drawn    bool
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// counters returns the phase's counter that moves: blocks, else tuples.
func counters(p migrate.Progress) (done, total int64, unit string) {
	if p.BlocksTotal > 0 {
		return p.BlocksDone, p.BlocksTotal, "blocks"
	}
	if p.TuplesTotal > 0 {
		return p.TuplesDone, p.TuplesTotal, "tuples"
	}
	return 0, 0, ""
}

func (pp *progressPrinter) report(store string, p migrate.Progress) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	head := fmt.Sprintf("%s: %04d %s: index %s", store, p.Version, p.Name, p.Index)
	if p.Done {
		if pp.terminal && pp.drawn {
			_, _ = fmt.Fprint(pp.w, "\n")
		}
		_, _ = fmt.Fprintf(pp.w, "%s: built in %s\n", head, p.Elapsed.Round(time.Millisecond))
		pp.phase, pp.drawn, pp.prev = "", false, migrate.Progress{}
		return
	}
	done, total, unit := counters(p)
	newPhase := p.Phase != pp.phase
	rate := 0.0
	if !newPhase && p.Elapsed > pp.prev.Elapsed {
		prevDone, _, _ := counters(pp.prev)
		rate = float64(done-prevDone) / (p.Elapsed - pp.prev.Elapsed).Seconds()
	}
	pp.phase, pp.prev = p.Phase, p
	if !pp.terminal {
		if !newPhase {
			return
		}
		line := fmt.Sprintf("%s: %s", head, p.Phase)
		if total > 0 {
			line += fmt.Sprintf(" (%d %s)", total, unit)
		}
		_, _ = fmt.Fprintf(pp.w, "%s after %s\n", line, p.Elapsed.Round(time.Second))
		return
	}
	line := fmt.Sprintf("%s: %s", head, p.Phase)
	if total > 0 {
		line += fmt.Sprintf(" %d/%d %s (%.0f%%)", done, total, unit, 100*float64(done)/float64(total))
		if rate > 0 {
			eta := time.Duration(float64(total-done) / rate * float64(time.Second))
			line += fmt.Sprintf(", %.0f %s/s, ETA %s", rate, unit, eta.Round(time.Second))
		}
	}
	_, _ = fmt.Fprintf(pp.w, "\r\033[K%s", line)
	pp.drawn = true
}
