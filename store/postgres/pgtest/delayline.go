package pgtest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// delayLine is a TCP proxy on loopback that passes what the server (the
// primary) sends on after a fixed delay, and what the client (the standby)
// sends at once: a replication link across which the standby lags by the
// delay. close drops what it still holds.
type delayLine struct {
	target string
	delay  time.Duration
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newDelayLine(target string, delay time.Duration) (*delayLine, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("delay line to %s: %w", target, err)
	}
	d := &delayLine{target: target, delay: delay, ln: ln, conns: map[net.Conn]struct{}{}}
	d.wg.Go(d.accept)
	return d, nil
}

func (d *delayLine) port() int { return d.ln.Addr().(*net.TCPAddr).Port }

// close stops accepting, closes every connection (what is delayed is
// dropped) and waits for the copies to end.
func (d *delayLine) close() {
	_ = d.ln.Close()
	d.mu.Lock()
	d.closed = true
	for c := range d.conns {
		_ = c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// track adds c to the open connections, or closes it and tells false
// once the line is closed.
func (d *delayLine) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = c.Close()
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *delayLine) accept() {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return // closed
		}
		if !d.track(c) {
			return
		}
		d.wg.Go(func() { d.serve(c) })
	}
}

func (d *delayLine) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", d.target)
	if err != nil {
		return
	}
	if !d.track(up) {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { d.delayed(c, up); done <- struct{}{} }()
	<-done // one side ended: end both
	_ = c.Close()
	_ = up.Close()
	<-done
}

// delayed copies src to dst, each read passed on delay after it was made.
func (d *delayLine) delayed(dst io.Writer, src io.Reader) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{b: buf[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		time.Sleep(time.Until(ch.at.Add(d.delay)))
		if _, err := dst.Write(ch.b); err != nil {
			for range q { // drain so the reader ends
			}
			return
		}
	}
}
