package soak

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer answers every connection with what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// A cut holds the bytes of its direction (nothing arrives, nothing fails)
// until the heal delivers them, for either direction and for connections
// made while cut.
func TestNetProxyCutHoldsUntilHeal(t *testing.T) {
	t.Parallel()
	p, err := newNetProxy("test", echoServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.close() })
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	roundTrip := func(conn net.Conn, msg string) {
		t.Helper()
		_, err := conn.Write([]byte(msg))
		require.NoError(t, err)
		buf := make([]byte, len(msg))
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = io.ReadFull(conn, buf)
		require.NoError(t, err)
		require.Equal(t, msg, string(buf))
	}
	held := func(conn net.Conn, msg string) {
		t.Helper()
		_, err := conn.Write([]byte(msg))
		require.NoError(t, err, "a cut link takes writes")
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		n, err := conn.Read(make([]byte, 16))
		require.Zero(t, n, "nothing crosses a cut link")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout(), "a cut link is silent, not closed: %v", err)
	}
	roundTrip(c, "before")
	for _, dirs := range []int{toDependency, toCenter, bothWays} {
		p.cut(dirs)
		held(c, "held")
		late, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err, "connections are accepted while cut")
		held(late, "late")
		p.heal()
		buf := make([]byte, 4)
		for conn, want := range map[net.Conn]string{c: "held", late: "late"} {
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			_, err = io.ReadFull(conn, buf)
			require.NoError(t, err)
			require.Equal(t, want, string(buf), "delivered after the heal")
		}
		roundTrip(late, "after")
		_ = late.Close()
		roundTrip(c, "after")
	}
}

// A degraded link passes every byte, in order, no sooner than its delay
// (both ways: a round trip takes twice as long); heal restores it.
func TestNetProxyDegradeDelaysAndKeepsTheStream(t *testing.T) {
	t.Parallel()
	p, err := newNetProxy("test", echoServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.close() })
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	const d = 100 * time.Millisecond
	p.degrade(bothWays, d, 0.5)
	for i := range 5 {
		msg := []byte{'a' + byte(i), 'b' + byte(i), 'c' + byte(i)}
		start := time.Now()
		_, err := c.Write(msg)
		require.NoError(t, err)
		buf := make([]byte, len(msg))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, msg, buf, "the stream is intact")
		require.GreaterOrEqual(t, time.Since(start), 2*d, "delayed each way")
	}
	p.heal()
	require.Zero(t, p.delay[0].Load()+p.delay[1].Load())
	require.Zero(t, p.loss[0].Load()+p.loss[1].Load())
}
