package progress_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/progress"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }

func reporter(w io.Writer, terminal bool) (*progress.Reporter, *clock) {
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	return progress.New(w, "move-buckets", progress.Options{Terminal: &terminal, Now: c.now}), c
}

// Not on a terminal: nothing while a phase runs, one line when it ends.
func TestPlainOneLinePerPhase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, c := reporter(&out, false)
	r.Start("copy messages", "messages", 1000)
	for range 10 {
		c.add(100 * time.Millisecond)
		r.Add(100)
	}
	require.Empty(t, out.String(), "quiet while the phase runs")
	c.add(500 * time.Millisecond)
	r.Start("copy audit records", "records", 0) // ends the first phase
	r.Add(30)
	c.add(2 * time.Second)
	r.Done()
	r.Done() // nothing more
	require.Equal(t, "move-buckets: copy messages: 1000/1000 messages in 1.5s (667 messages/s)\n"+
		"move-buckets: copy audit records: 30 records in 2s (15.0 records/s)\n", out.String())
}

// On a terminal: one line redrawn with done/total, percentage, rate and
// ETA, at most every 100ms; the phase's last line stays.
func TestTerminalRedrawsOneLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, c := reporter(&out, true)
	r.Start("copy messages", "messages", 1000)
	c.add(time.Second)
	r.Add(200)
	c.add(10 * time.Millisecond)
	r.Add(1) // too soon: not drawn
	c.add(time.Second)
	r.Add(199)
	c.add(time.Second)
	r.Set(1000, 1000)
	r.Done()
	require.Equal(t, "\r\033[Kmove-buckets: copy messages: 0/1000 messages (0%)"+
		"\r\033[Kmove-buckets: copy messages: 200/1000 messages (20%), 200 messages/s, ETA 4s"+
		"\r\033[Kmove-buckets: copy messages: 400/1000 messages (40%), 199 messages/s, ETA 3s"+
		"\r\033[Kmove-buckets: copy messages: 1000/1000 messages (100%), 332 messages/s"+
		"\r\033[Kmove-buckets: copy messages: 1000/1000 messages in 3s (332 messages/s)\n", out.String())
}

func TestNilReporterDoesNothing(t *testing.T) {
	t.Parallel()
	var r *progress.Reporter
	r.Start("x", "y", 1)
	r.Add(1)
	r.Set(1, 1)
	r.Done()
}

// A real pseudo-terminal is detected as a terminal; a pipe and a buffer
// are not.
func TestDetectsAPseudoTerminal(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer func() { _ = ptmx.Close() }()
	require.True(t, progress.IsTerminal(tty))
	require.False(t, progress.IsTerminal(&bytes.Buffer{}))
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	require.False(t, progress.IsTerminal(pw))
	_ = pr.Close()
	_ = pw.Close()

	r := progress.New(tty, "soak", progress.Options{})
	r.Start("send", "messages", 10)
	r.Add(5)
	r.Done()
	require.NoError(t, tty.Close())
	got, err := bufio.NewReader(ptmx).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got, "\r\033[Ksoak: send: 0/10 messages (0%)"), "%q", got)
	require.Contains(t, got, "\r\033[Ksoak: send: 5/10 messages in ")
}

// Log lines between redraws clear the progress line and draw it again.
func TestPrintfKeepsLinesApart(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r, c := reporter(&out, true)
	r.Printf("before %d", 1) // no phase yet: just the line
	r.Start("send", "messages", 0)
	c.add(time.Second)
	r.Add(10)
	r.Printf("fault: %s", "SIGKILL center 1")
	r.Done()
	require.Equal(t, "before 1\n"+
		"\r\033[Kmove-buckets: send: 0 messages"+
		"\r\033[Kmove-buckets: send: 10 messages, 10.0 messages/s"+
		"\r\033[Kfault: SIGKILL center 1\n"+
		"\r\033[Kmove-buckets: send: 10 messages, 10.0 messages/s"+
		"\r\033[Kmove-buckets: send: 10 messages in 1s (10.0 messages/s)\n", out.String())

	var plain bytes.Buffer
	r, _ = reporter(&plain, false)
	r.Start("send", "messages", 0)
	r.Printf("fault: %s", "x")
	require.Equal(t, "fault: x\n", plain.String())
}
