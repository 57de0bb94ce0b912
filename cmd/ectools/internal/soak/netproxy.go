package soak

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
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
// Delayed, what is read from that side is passed on that much later;
// lossy, a read is held now and then as TCP holds a stream whose segment
// was lost (a retransmission timeout, 200 ms doubling while the loss goes
// on): a TCP proxy cannot drop bytes without breaking the stream, so loss
// shows as what it costs the application, stalls.
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
	// delay (nanoseconds) and loss (per million reads) by direction.
	delay [2]atomic.Int64
	loss  [2]atomic.Uint32
	// kafka: the dependency is a Kafka broker; the proxy reads the
	// protocol's frames and answers Metadata and FindCoordinator with its
	// own address, so the clients' connections to the broker it names
	// come through it too (see kafkaproxy.go).
	kafka *kafkaRewrite
	mu    sync.Mutex // guards cut (the open gates) and conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newNetProxy listens on a free loopback port and forwards every
// connection to target.
func newNetProxy(name, target string) (*netProxy, error) {
	p, err := listenProxy(name, target)
	if err != nil {
		return nil, err
	}
	p.wg.Go(p.accept)
	return p, nil
}

// listenProxy is newNetProxy without accepting yet.
func listenProxy(name, target string) (*netProxy, error) {
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

// degrade delays what crosses the given directions by d and stalls a
// share loss (0 to 1) of the reads as a lost segment would, until heal.
func (p *netProxy) degrade(dirs int, d time.Duration, loss float64) {
	for i := range p.gates {
		if dirs&(1<<i) != 0 {
			p.delay[i].Store(int64(d))
			p.loss[i].Store(uint32(loss * 1e6))
		}
	}
}

// heal lets every direction through again, held bytes first, without
// delay or loss.
func (p *netProxy) heal() {
	for i := range p.gates {
		p.delay[i].Store(0)
		p.loss[i].Store(0)
	}
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

// close stops accepting, closes every connection and waits for the
// copies. What a cut or a delay holds is dropped, not passed on: the
// connections close before the gates open.
func (p *netProxy) close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.heal()
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
	up, down := chunks(c), chunks(d)
	if p.kafka != nil {
		k := p.kafka.conn()
		up, down = k.requests(bufio.NewReader(c)), k.responses(bufio.NewReader(d))
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(d, up, 0); done <- struct{}{} }()
	go func() { p.pipe(c, down, 1); done <- struct{}{} }()
	<-done // one side ended: end both
	_ = c.Close()
	_ = d.Close()
	<-done
}

// chunks reads r a buffer at a time.
func chunks(r io.Reader) func() ([]byte, error) {
	return func() ([]byte, error) {
		buf := make([]byte, 32<<10)
		n, err := r.Read(buf)
		return buf[:n], err
	}
}

// read is what a pipe's reader read, and when.
type read struct {
	b  []byte
	at time.Time
}

// readAhead is how many reads a pipe takes in while it holds them (a cut
// link): the side that writes sees its writes taken, as a network takes
// packets it will drop, and each read keeps the time it was made.
const readAhead = 1024

// Stalls of a lossy link: TCP's first retransmission timeout, doubled
// for each loss in a row up to the cap.
const (
	lossStallFirst = 200 * time.Millisecond
	lossStallMax   = 3 * time.Second
)

// pipe copies what next reads to dst; each piece waits at direction dir's
// gate, then for its delay and its losses. A reader goroutine reads ahead
// (readAhead), so that what a cut holds was read when it was written.
func (p *netProxy) pipe(dst io.Writer, next func() ([]byte, error), dir int) {
	reads := make(chan read, readAhead)
	quit := make(chan struct{})
	defer close(quit)
	p.wg.Go(func() {
		defer close(reads)
		for {
			b, err := next()
			if len(b) > 0 {
				select {
				case reads <- read{b: b, at: time.Now()}:
				case <-quit:
					return
				}
			}
			if err != nil {
				return // EOF or closed: serve ends both sides
			}
		}
	})
	for r := range reads {
		<-*p.gates[dir].Load()
		if d := time.Duration(p.delay[dir].Load()); d > 0 {
			time.Sleep(time.Until(r.at.Add(d)))
		}
		for stall := lossStallFirst; rand.Uint32N(1e6) < p.loss[dir].Load(); stall = min(2*stall, lossStallMax) {
			time.Sleep(stall)
		}
		if _, err := dst.Write(r.b); err != nil {
			return
		}
	}
}

// linkSet is one center's link to a dependency with several nodes (the
// PostgreSQL primary and standby): a fault point per node, faulted and
// healed together.
type linkSet []*netProxy

func (l linkSet) cut(dirs int) {
	for _, p := range l {
		p.cut(dirs)
	}
}

func (l linkSet) heal() {
	for _, p := range l {
		p.heal()
	}
}

func (l linkSet) close() {
	for _, p := range l {
		_ = p.close()
	}
}
