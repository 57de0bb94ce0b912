package clients

import (
	"bufio"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startCheckbackServer runs a client's check-back handler (deciding
// COMMIT) on a free loopback port and returns its address.
func startCheckbackServer(t *testing.T, lang string) string {
	t.Helper()
	var cmd *exec.Cmd
	switch lang {
	case "node":
		cmd = exec.CommandContext(t.Context(), needTool(t, "node"), "--input-type=module", "-e", `
const { checkbackHandler } = await import(process.argv[1] + '/eventcenter.mjs');
const http = await import('node:http');
const s = http.createServer(checkbackHandler(() => 'commit'));
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`, mustAbs(t, "node"))
	case "python":
		cmd = exec.CommandContext(t.Context(), needTool(t, "python3"), "-c", `
import sys
sys.path.insert(0, sys.argv[1])
import eventcenter as ec
from http.server import ThreadingHTTPServer
s = ThreadingHTTPServer(("127.0.0.1", 0), ec.checkback_handler(lambda biz_id, key: "commit"))
print(s.server_address[1], flush=True)
s.serve_forever()
`, mustAbs(t, "python"))
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	port, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return "127.0.0.1:" + strings.TrimSpace(port)
}

func mustAbs(t *testing.T, dir string) string {
	t.Helper()
	p, err := filepath.Abs(dir)
	require.NoError(t, err)
	return p
}

// exchange writes head on a new connection (and no more of any body it
// announces) and returns everything answered until the server closes the
// connection or 5 s pass.
func exchange(t *testing.T, addr, head string) (answered string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = io.WriteString(c, head)
	require.NoError(t, err)
	b, err := io.ReadAll(c)
	return string(b), err == nil
}

// The Node and Python check-back handlers check the method and the
// framing before reading anything, and close the connection on a refusal:
// a 200 MB POST or a GET announcing a 200 MB body is answered at once (405,
// 400) without the body being sent; a chunked GET is refused, not decided;
// a body hiding a second request never reaches the handler as one.
func TestCheckbackHandlersCheckBeforeReading(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"node", "python"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			addr := startCheckbackServer(t, lang)
			const big = "Content-Length: 209715200\r\n"
			for _, c := range []struct {
				name, head, status string
			}{
				{"200 MB POST, body not sent", "POST /cb?bizID=b&messageKey=k HTTP/1.1\r\nHost: x\r\n" + big + "\r\n" + strings.Repeat("x", 1024), "HTTP/1.1 405 "},
				{"GET announcing 200 MB", "GET /cb?bizID=b&messageKey=k HTTP/1.1\r\nHost: x\r\n" + big + "\r\n", "HTTP/1.1 400 "},
				{"chunked GET", "GET /cb?bizID=b&messageKey=k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "HTTP/1.1 400 "},
			} {
				answered, closed := exchange(t, addr, c.head)
				require.True(t, strings.HasPrefix(answered, c.status), "%s: %q", c.name, answered)
				require.True(t, closed, "%s: the connection is closed after a refusal", c.name)
				require.NotContains(t, answered, "SUCCESS", c.name)
			}
			smuggled := "GET /cb?bizID=b&messageKey=smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
			answered, closed := exchange(t, addr, "GET /cb?bizID=b&messageKey=k HTTP/1.1\r\nHost: x\r\nContent-Length: "+
				strconv.Itoa(len(smuggled))+"\r\n\r\n"+smuggled)
			require.True(t, strings.HasPrefix(answered, "HTTP/1.1 400 "), answered)
			require.Equal(t, 1, strings.Count(answered, "HTTP/1.1 "), "one answer: the body is no request: %q", answered)
			require.NotContains(t, answered, "smuggled")
			require.True(t, closed)

			answered, _ = exchange(t, addr, "GET /cb?bizID=b&messageKey=k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			require.True(t, strings.HasPrefix(answered, "HTTP/1.1 200 "), answered)
			require.Contains(t, answered, "SUCCESS")
			require.Contains(t, answered, "messageStatus")
		})
	}
}
