package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// IsTerminal tells whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Options adjust a Reporter.
type Options struct {
	// Terminal forces the terminal (redrawn line) or plain (one line per
	// phase) output; nil detects it from the writer.
	Terminal *bool
	// Now is the clock (nil → time.Now).
	Now func() time.Time
	// Every is the least time between two redraws on a terminal (default
	// 100ms).
	Every time.Duration
}

// Reporter writes the progress of one task's phases to a writer. Its
// methods are safe for concurrent use; a nil *Reporter does nothing.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	task     string
	terminal bool
	now      func() time.Time
	every    time.Duration

	phase       string
	unit        string
	done, total int64
	started     time.Time
	active      bool
	drawn       bool
	lastDraw    time.Time
}

// New returns a reporter of task (the line's prefix, such as
// "move-buckets"; "" for none) writing to w.
func New(w io.Writer, task string, opt Options) *Reporter {
	r := &Reporter{w: w, task: task, now: opt.Now, every: opt.Every}
	if opt.Terminal != nil {
		r.terminal = *opt.Terminal
	} else {
		r.terminal = IsTerminal(w)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.every <= 0 {
		r.every = 100 * time.Millisecond
	}
	return r
}

// Start ends the current phase, if any, and starts one: total is the
// number of units of work it has (0 when unknown), unit names them
// ("messages").
func (r *Reporter) Start(phase, unit string, total int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end()
	r.phase, r.unit, r.done, r.total = phase, unit, 0, total
	r.started, r.active, r.lastDraw = r.now(), true, time.Time{}
	r.draw(true)
}

// Add counts n more units done.
func (r *Reporter) Add(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done += n
	r.draw(false)
}

// Set sets the units done and the total (for work that reports absolute
// counters).
func (r *Reporter) Set(done, total int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.total = done, total
	r.draw(false)
}

// Printf writes a line of its own (a log line), with a newline added. On a
// terminal the progress line is cleared first and drawn again after it, so
// the two never mix.
func (r *Reporter) Printf(format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminal && r.drawn {
		_, _ = fmt.Fprint(r.w, "\r\033[K")
		r.drawn = false
	}
	_, _ = fmt.Fprintf(r.w, format+"\n", args...)
	r.draw(true)
}

// Done ends the current phase: its final line says how much was done, how
// long it took and at what rate.
func (r *Reporter) Done() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end()
}

func (r *Reporter) end() {
	if !r.active {
		return
	}
	r.active = false
	el := r.now().Sub(r.started)
	line := r.head() + r.count()
	line += " in " + round(el)
	if rate := r.rate(el); rate > 0 {
		line += fmt.Sprintf(" (%s %s/s)", num(rate), r.unit)
	}
	if r.terminal && r.drawn {
		line = "\r\033[K" + line
	}
	r.drawn = false
	_, _ = fmt.Fprintln(r.w, line)
}

func (r *Reporter) head() string {
	if r.task == "" {
		return r.phase
	}
	return r.task + ": " + r.phase
}

func (r *Reporter) count() string {
	if r.unit == "" && r.done == 0 && r.total == 0 {
		return "" // a phase with nothing to count (waiting)
	}
	u := ""
	if r.unit != "" {
		u = " " + r.unit
	}
	if r.total > 0 {
		return fmt.Sprintf(": %d/%d%s", r.done, r.total, u)
	}
	return fmt.Sprintf(": %d%s", r.done, u)
}

func (r *Reporter) rate(el time.Duration) float64 {
	if el <= 0 || r.done <= 0 {
		return 0
	}
	return float64(r.done) / el.Seconds()
}

// draw redraws the terminal line, at most every r.every unless forced.
func (r *Reporter) draw(force bool) {
	if !r.terminal || !r.active {
		return
	}
	now := r.now()
	if !force && !r.lastDraw.IsZero() && now.Sub(r.lastDraw) < r.every {
		return
	}
	r.lastDraw = now
	el := now.Sub(r.started)
	line := r.head() + r.count()
	if r.total > 0 {
		line += fmt.Sprintf(" (%d%%)", 100*r.done/r.total)
	}
	if rate := r.rate(el); rate > 0 {
		line += fmt.Sprintf(", %s %s/s", num(rate), r.unit)
		if r.total > r.done {
			line += ", ETA " + round(time.Duration(float64(r.total-r.done)/rate*float64(time.Second)))
		}
	}
	_, _ = fmt.Fprint(r.w, "\r\033[K"+strings.TrimSpace(line))
	r.drawn = true
}

func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func round(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
