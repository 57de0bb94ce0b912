package headless

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Chromium returns a Chromium binary: $EVENTCENTER_CHROMIUM, else the first
// of chromium, chromium-browser, google-chrome on PATH. Without one the
// test skips, or fails when CI=true.
func Chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EVENTCENTER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium binary found (install one, e.g. apt-get install chromium, or set EVENTCENTER_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true makes this a failure")
	}
	t.Skip(msg)
	return ""
}

// Browser starts headless Chromium at 1280×900 for at most 90 seconds and
// returns its context; the browser stops when the test ends.
func Browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// Problems collects the console errors and warnings, error log entries and
// uncaught exceptions of the browser's pages from now on; the returned
// function lists them so far.
func Problems(t *testing.T, bctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var problems []string
	add := func(p string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, p)
	}
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				add("console " + string(e.Type))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				add("log: " + e.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			add("exception: " + e.ExceptionDetails.Text)
		}
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}
