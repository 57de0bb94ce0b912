package soak

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Directions of a link a netProxy can cut.
const (
	toDependency = 1 << iota // what the center sends
	toCenter                 // what the dependency answers
	bothWays     = toDependency | toCenter
)

// netProxy is a fault point on loopback between one center and one of its
// dependencies: the center connects to it instead of the dependency. Cut
// in one direction (or both), the bytes read from that side are held, not
// passed on, until the link heals: to both ends the link looks silent, as
// after a network partition where packets are dropped (no reset, no
// error; TCP's retransmissions deliver them after the heal). New
// connections are accepted while cut; what they send is held too.
//
// A small proxy rather than Toxiproxy as a library: the soak needs cut and
// heal per direction only, and the library would bring its HTTP API,
// metrics and logging dependencies into the tools' build.
type netProxy struct {
	name   string
	target string
	ln     net.Listener
	// gates[0] holds the bytes to the dependency, gates[1] those to the
	// center: a closed channel lets them through, an open one holds them
	// until it is closed.
	gates [2]atomic.Pointer[chan struct{}]
	mu    sync.Mutex // guards cut (the open gates) and conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newNetProxy listens on a free loopback port and forwards every
// connection to target.
func newNetProxy(name, target string) (*netProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("soak: proxy %s: %w", name, err)
	}
	p := &netProxy{name: name, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	for i := range p.gates {
		open := make(chan struct{})
		close(open)
		p.gates[i].Store(&open)
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address the center connects to.
func (p *netProxy) Addr() string { return p.ln.Addr().String() }

// Port is Addr's port.
func (p *netProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// cut holds the bytes of the given directions until heal.
func (p *netProxy) cut(dirs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.gates {
		if dirs&(1<<i) == 0 {
			continue
		}
		g := *p.gates[i].Load()
		select {
		case <-g: // passing: hold from now on
			held := make(chan struct{})
			p.gates[i].Store(&held)
		default: // held already
		}
	}
}

// heal lets every direction through again, held bytes first.
func (p *netProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.gates {
		g := *p.gates[i].Load()
		select {
		case <-g:
		default:
			close(g)
		}
	}
}

// close stops accepting, closes every connection and waits for the copies.
func (p *netProxy) close() error {
	err := p.ln.Close()
	p.heal()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *netProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *netProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *netProxy) serve(c net.Conn) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	d, err := net.Dial("tcp", p.target)
	if err != nil {
		return // the dependency is down: the center sees the connection close
	}
	p.track(d, true)
	defer p.track(d, false)
	defer d.Close()
	done := make(chan struct{}, 2)
	go func() { p.pipe(d, c, &p.gates[0]); done <- struct{}{} }()
	go func() { p.pipe(c, d, &p.gates[1]); done <- struct{}{} }()
	<-done // one side ended: end both
	_ = c.Close()
	_ = d.Close()
	<-done
}

// pipe copies from src to dst, each chunk waiting at the gate.
func (p *netProxy) pipe(dst io.Writer, src io.Reader, gate *atomic.Pointer[chan struct{}]) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-*gate.Load()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: serve ends both sides
		}
	}
}
