package bench

import (
	"bytes"
	"fmt"
	"io"
	"runtime/pprof"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// CPUParts splits the bench process's CPU time into its parts, from a CPU
// profile taken over the center phase in every run (not only with
// --cpuprofile). Each goroutine carries a pprof label naming its part
// (profilePart): kfake's goroutines "broker", the center's "center", the
// producers, the business-topic consumer and the check-back server
// "load"; goroutines inherit the label of the goroutine that starts them,
// so the connection goroutines of each part (franz-go's, net/http's) count
// with it. Samples without a label are the Go runtime's own (the garbage
// collector's background workers, the scheduler, timers): "runtime". The
// profiler samples at 100 Hz per CPU, so a part's figure is its share of
// the samples times the process's CPU time from /proc (the two agree
// within a few percent; the shares are what the profile measures).
type CPUParts struct {
	// Samples is how many profile samples the phase took.
	Samples int64 `json:"samples"`
	// Share is each part's share of the samples (0..1), by part name.
	Share map[string]float64 `json:"share"`
	// UsPerMsg is each part's CPU per forwarded message: its share times
	// the process's CPU seconds from /proc, divided by the forwarded
	// messages.
	UsPerMsg map[string]float64 `json:"us_per_msg"`
	// UsPerCheckback is the center's CPU per resolved check-back, when
	// the run had check-backs: the center's CPU seconds divided by the
	// check-backs resolved (every message of a --checkback-ratio 1 run).
	CenterUsPerCheckback float64 `json:"center_us_per_checkback,omitempty"`
	// CenterComponents splits the center's CPU by the component its
	// goroutines belong to (componentLabel: ingest, verifier,
	// forwarder, ...; "other" for goroutines started outside a
	// component's Start, such as the HTTP servers'), in µs per resolved
	// check-back when the run had check-backs, else per forwarded
	// message. The verifier's is a check-back's own work (the claim, the
	// call with its connection's goroutines, the answer's write) and the
	// inline forward the answer sets off, with what the Kafka client
	// does on the goroutines that send starts.
	CenterComponents map[string]float64 `json:"center_components_us,omitempty"`
	// CenterTop is the center's costliest functions by flat samples (at
	// most ten), as "function share-of-center".
	CenterTop []string `json:"center_top,omitempty"`
	// CenterTopCode is the same with each sample charged to its innermost
	// frame outside the standard library (the eventcenter, franz-go or pgx
	// function that led to the runtime's or net's work), or to
	// "(standard library)" when the stack has none.
	CenterTopCode []string `json:"center_top_code,omitempty"`
}

// partProfiler runs a CPU profile over the center phase into memory (and
// into w, the --cpuprofile file, when set).
type partProfiler struct {
	buf     bytes.Buffer
	running bool
}

// start begins the profile. If another profile already runs (a test run
// with -cpuprofile), the parts are not measured and start says why.
func (p *partProfiler) start(w io.Writer) error {
	var out io.Writer = &p.buf
	if w != nil {
		out = io.MultiWriter(&p.buf, w)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		return fmt.Errorf("cpu profile for the parts: %w", err)
	}
	p.running = true
	return nil
}

// abort stops a profile that stop did not (a run that failed midway).
func (p *partProfiler) abort() {
	if p.running {
		pprof.StopCPUProfile()
		p.running = false
	}
}

// stop ends the profile and splits it into parts.
func (p *partProfiler) stop(processSeconds float64, forwarded, checkbacks int64) (*CPUParts, error) {
	if !p.running {
		return nil, nil
	}
	pprof.StopCPUProfile()
	p.running = false
	prof, err := profile.Parse(&p.buf)
	if err != nil {
		return nil, fmt.Errorf("read the cpu profile: %w", err)
	}
	return splitParts(prof, processSeconds, forwarded, checkbacks), nil
}

// splitParts sums a profile's samples by their part label.
func splitParts(prof *profile.Profile, processSeconds float64, forwarded, checkbacks int64) *CPUParts {
	vi := len(prof.SampleType) - 1 // cpu nanoseconds (samples/count is 0)
	by := map[string]int64{}
	var total int64
	flat, code, byComp := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var centerTotal int64
	for _, s := range prof.Sample {
		v := s.Value[vi]
		part := "runtime"
		if l := s.Label[profilePart]; len(l) > 0 {
			part = l[0]
		}
		by[part] += v
		total += v
		if part == "center" {
			comp := "other"
			if l := s.Label[componentLabel]; len(l) > 0 {
				comp = l[0]
			}
			byComp[comp] += v
		}
		if part == "center" && len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			flat[s.Location[0].Line[0].Function.Name] += v
			code[ownFrame(s)] += v
			centerTotal += v
		}
	}
	c := &CPUParts{Share: map[string]float64{}, UsPerMsg: map[string]float64{}}
	if total == 0 {
		return c
	}
	c.Samples = int64(len(prof.Sample))
	for part, v := range by {
		share := float64(v) / float64(total)
		c.Share[part] = share
		if forwarded > 0 {
			c.UsPerMsg[part] = share * processSeconds * 1e6 / float64(forwarded)
		}
	}
	if checkbacks > 0 {
		c.CenterUsPerCheckback = c.Share["center"] * processSeconds * 1e6 / float64(checkbacks)
	}
	per := checkbacks
	if per == 0 {
		per = forwarded
	}
	if per > 0 {
		c.CenterComponents = map[string]float64{}
		for comp, v := range byComp {
			c.CenterComponents[comp] = float64(v) / float64(total) * processSeconds * 1e6 / float64(per)
		}
	}
	c.CenterTop = top(flat, centerTotal)
	c.CenterTopCode = top(code, centerTotal)
	return c
}

// top renders the ten largest entries of by as "name share%".
func top(by map[string]int64, total int64) []string {
	type fn struct {
		name string
		v    int64
	}
	var fns []fn
	for n, v := range by {
		fns = append(fns, fn{n, v})
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].v > fns[j].v || fns[i].v == fns[j].v && fns[i].name < fns[j].name })
	var out []string
	for i := 0; i < len(fns) && i < 10; i++ {
		out = append(out, fmt.Sprintf("%s %.1f%%", fns[i].name, 100*float64(fns[i].v)/float64(total)))
	}
	return out
}

// ownFrame is the innermost function of a sample's stack that is not in
// the standard library (its package path has a slash, and a dot in its
// first element: github.com/..., not syscall or internal/runtime/...).
func ownFrame(s *profile.Sample) string {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			first, _, slash := strings.Cut(name, "/")
			if slash && strings.Contains(first, ".") {
				return name
			}
		}
	}
	return "(standard library)"
}
