package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/internal/progress"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// progressPrinter shows the progress of long migration steps through
// internal/progress: on a terminal one redrawn line (done/total, rate,
// ETA); otherwise (a log file, CI) one line per phase and one when the
// step is done.
type progressPrinter struct {
	mu  sync.Mutex
	r   *progress.Reporter
	key string
}

func newProgressPrinter(w io.Writer, opt progress.Options) *progressPrinter {
	return &progressPrinter{r: progress.New(w, "", opt)}
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
	done, total, unit := counters(p)
	if key := head + "\x00" + p.Phase + "\x00" + unit; key != pp.key && !p.Done {
		pp.r.Start(head+": "+p.Phase, unit, total)
		pp.key = key
	}
	if total > 0 {
		pp.r.Set(done, total)
	}
	if p.Done {
		pp.r.Done()
		pp.r.Printf("%s: built in %s", head, p.Elapsed.Round(time.Millisecond))
		pp.key = ""
	}
}
