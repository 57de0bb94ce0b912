package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/dirlock"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// startDev runs dev on dataDir (any free ports) until the test ends and
// returns its banner once it printed it.
func startDev(t *testing.T, dataDir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var out, logs logbuf.Buffer
	done := make(chan error, 1)
	go func() {
		root := newRoot(&out, &logs)
		root.SetArgs([]string{"dev", "--data-dir", dataDir, "--kafka-addr", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0", "--partitions", "1"})
		done <- root.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, logs.String())
		case <-time.After(60 * time.Second):
			t.Error("dev did not stop")
		}
	})
	deadline := time.After(90 * time.Second)
	for !strings.Contains(out.String(), "eventcenter dev is running") {
		select {
		case err := <-done:
			t.Fatalf("dev ended: %v\n%s", err, logs.String())
		case <-deadline:
			t.Fatalf("dev did not start:\n%s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return out.String()
}

// A second dev on the same data directory (other ports) refuses to start,
// naming the first one's pid, before it starts a broker or opens the
// SQLite file; the data directory and everything dev writes in it are
// the owner's only.
func TestDevDataDirIsExclusiveAndPrivate(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	startDev(t, dataDir)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	root := newRoot(io.Discard, io.Discard)
	root.SetArgs([]string{"dev", "--data-dir", dataDir, "--kafka-addr", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0"})
	err := root.ExecuteContext(ctx)
	require.ErrorContains(t, err, fmt.Sprintf("in use by process %d", os.Getpid()))
	require.ErrorContains(t, err, "--data-dir")

	checkPrivate(t, dataDir)
}

// A second dev on another data directory, whose ports are taken, fails
// naming the flags that move it to free ones, for each of its three
// listeners.
func TestDevPortInUseNamesTheFlags(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	addr := taken.Addr().String()
	for _, args := range [][]string{
		{"--kafka-addr", addr, "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0"},
		{"--kafka-addr", "127.0.0.1:0", "--http-listen", addr, "--ingress-listen", "127.0.0.1:0"},
		{"--kafka-addr", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ingress-listen", addr},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		root := newRoot(io.Discard, io.Discard)
		root.SetArgs(append([]string{"dev", "--data-dir", filepath.Join(t.TempDir(), "data")}, args...))
		err := root.ExecuteContext(ctx)
		cancel()
		require.ErrorContains(t, err, "address already in use", "%v", args)
		for _, flag := range []string{"--kafka-addr", "--http-listen", "--ingress-listen"} {
			require.ErrorContains(t, err, flag, "%v", args)
		}
	}
}

// checkPrivate checks that dir is 0700, and everything in it is closed
// to group and others.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm(), "data dir")
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		require.Zero(t, info.Mode().Perm()&0o077, "%s is %v", path, info.Mode().Perm())
		files = append(files, path)
		return nil
	}))
	for _, want := range []string{"eventcenter.db", "eventcenter.db-wal", dirlock.FileName, "kafka"} {
		require.Contains(t, files, filepath.Join(dir, want))
	}
	require.Greater(t, len(files), 6, "the broker wrote files: %v", files)
}

// A data directory an earlier dev wrote 0755 / 0644 is made private.
func TestDevTightensAnOldDataDir(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.MkdirAll(filepath.Join(dataDir, "kafka", "old"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "kafka", "old", "seg"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(dataDir, 0o755))
	startDev(t, dataDir)
	checkPrivate(t, dataDir)
}

// shellWords splits a command line with single quotes, as the banner
// writes them.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in, quoted = !in, true
		case r == ' ' && !in:
			if cur.Len() > 0 || quoted {
				words = append(words, cur.String())
			}
			cur.Reset()
			quoted = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || quoted {
		words = append(words, cur.String())
	}
	return words
}

// The banner's curl lines work as printed: prepare and commit over HTTP
// are accepted, and the state shows the message committed and sent.
func TestDevBannerCurlLines(t *testing.T) {
	banner := startDev(t, filepath.Join(t.TempDir(), "data"))
	require.Contains(t, banner, "Producer API:")
	var lines []string
	for line := range strings.Lines(banner) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "curl ") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 3, banner)
	run := func(line string) (int, string) {
		words := shellWords(line)
		method, body, url := "GET", "", ""
		var hdr [][2]string
		for i := 1; i < len(words); i++ {
			switch words[i] {
			case "-X":
				i++
				method = words[i]
			case "-H":
				i++
				k, v, _ := strings.Cut(words[i], ": ")
				hdr = append(hdr, [2]string{k, v})
			case "-d":
				i++
				body = words[i]
			default:
				url = words[i]
			}
		}
		req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
		require.NoError(t, err)
		for _, h := range hdr {
			req.Header.Set(h[0], h[1])
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	for _, line := range lines[:2] {
		code, body := run(line)
		require.Equal(t, http.StatusAccepted, code, "%s: %s", line, body)
	}
	require.Eventually(t, func() bool {
		code, body := run(lines[2])
		return code == http.StatusOK && strings.Contains(body, `"status":"COMMITTED"`) && strings.Contains(body, `"send_status":"SENT"`)
	}, 30*time.Second, 50*time.Millisecond)
}
