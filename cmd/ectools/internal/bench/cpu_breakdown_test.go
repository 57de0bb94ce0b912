package bench

import (
	"bytes"
	"context"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

// A profile with labelled samples splits by label; unlabelled samples are
// the runtime's, and the center's top functions are its flat costs.
func TestSplitParts(t *testing.T) {
	t.Parallel()
	fn := func(name string) *profile.Location {
		return &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name}}}}
	}
	sample := func(part, f string, ns int64, callers ...string) *profile.Sample {
		s := &profile.Sample{Value: []int64{ns / 1e7, ns}, Location: []*profile.Location{fn(f)}}
		for _, c := range callers {
			s.Location = append(s.Location, fn(c))
		}
		if part != "" {
			s.Label = map[string][]string{profilePart: {part}}
		}
		return s
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			sample("center", "a", 30e6, "syscall.RawSyscall6", "internal/runtime/x.Y"), sample("center", "b", 10e6, "github.com/x/y.F"),
			sample("broker", "k", 20e6), sample("load", "l", 30e6), sample("", "gc", 10e6),
		},
	}
	// 2 s of process CPU over 10,000 messages: 200 µs per message in all.
	c := splitParts(p, 2, 10000, 4000)
	require.EqualValues(t, 5, c.Samples)
	require.InDelta(t, 0.4, c.Share["center"], 1e-9)
	require.InDelta(t, 0.1, c.Share["runtime"], 1e-9)
	require.InDelta(t, 80, c.UsPerMsg["center"], 1e-9)
	require.InDelta(t, 40, c.UsPerMsg["broker"], 1e-9)
	require.InDelta(t, 60, c.UsPerMsg["load"], 1e-9)
	require.InDelta(t, 200, c.CenterUsPerCheckback, 1e-9)
	require.Equal(t, []string{"a 75.0%", "b 25.0%"}, c.CenterTop)
	require.Equal(t, []string{"(standard library) 75.0%", "github.com/x/y.F 25.0%"}, c.CenterTopCode)

	empty := splitParts(&profile.Profile{SampleType: p.SampleType}, 1, 10, 0)
	require.Empty(t, empty.UsPerMsg)
}

// The profiler finds CPU burnt under a label; stop without start reports
// nothing and abort after stop does not stop someone else's profile.
func TestPartProfiler(t *testing.T) {
	var p partProfiler
	got, err := p.stop(1, 1, 0)
	require.NoError(t, err)
	require.Nil(t, got)
	var file bytes.Buffer
	if err := p.start(&file); err != nil {
		t.Skip("another CPU profile runs:", err)
	}
	pprof.Do(context.Background(), pprof.Labels(profilePart, "center"), func(context.Context) {
		x := 0
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			x++
		}
		_ = x
	})
	got, err = p.stop(0.3, 1000, 0)
	require.NoError(t, err)
	require.Positive(t, got.Samples)
	require.Greater(t, got.Share["center"], 0.5)
	require.Positive(t, file.Len(), "the --cpuprofile file receives the same profile")
	p.abort()
}
