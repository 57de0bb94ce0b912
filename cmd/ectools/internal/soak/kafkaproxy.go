package soak

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaRewrite makes a netProxy in front of a Kafka broker the address the
// broker advertises to the clients that come through it: a client learns
// brokers' addresses from Metadata (and its group coordinator's from
// FindCoordinator) and connects to those, which would go around the
// proxy. The proxy reads the protocol's frames both ways and, in those two
// answers, gives every broker its own address. The soak's broker is a
// single one, so every broker named is the one behind the proxy.
type kafkaRewrite struct {
	host string
	port int32
	// seen counts the requests that crossed by key (what a test reads to
	// know the clients' traffic came through).
	seen [128]atomic.Int64
	// produced are the times Produce requests were read from the client
	// (a cut link still reads: netProxy.pipe).
	mu       sync.Mutex
	produced []time.Time
}

// producedBetween counts the Produce requests read from the client in
// [from, to].
func (k *kafkaRewrite) producedBetween(from, to time.Time) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, at := range k.produced {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

func newKafkaRewrite(addr string) (*kafkaRewrite, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("soak: kafka proxy address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("soak: kafka proxy address %q: %w", addr, err)
	}
	return &kafkaRewrite{host: host, port: int32(n)}, nil
}

// newKafkaProxy is a netProxy in front of the broker at target that names
// itself as the broker (kafkaRewrite).
func newKafkaProxy(name, target string) (*netProxy, error) {
	p, err := listenProxy(name, target)
	if err != nil {
		return nil, err
	}
	if p.kafka, err = newKafkaRewrite(p.Addr()); err != nil {
		_ = p.close()
		return nil, err
	}
	p.wg.Go(p.accept)
	return p, nil
}

// kafkaConn is one proxied connection: the requests whose answers are
// rewritten, by correlation ID, with their key and version.
type kafkaConn struct {
	k       *kafkaRewrite
	mu      sync.Mutex
	pending map[int32][2]int16
}

func (k *kafkaRewrite) conn() *kafkaConn {
	return &kafkaConn{k: k, pending: map[int32][2]int16{}}
}

// maxFrame bounds a frame the proxy reads (the broker's own limit is
// lower; a larger size means the stream is not Kafka's).
const maxFrame = 256 << 20

// readFrame reads one size-prefixed frame, the size included.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrame {
		return nil, fmt.Errorf("soak: kafka frame of %d bytes", n)
	}
	f := make([]byte, 4+n)
	copy(f, size[:])
	if _, err := io.ReadFull(r, f[4:]); err != nil {
		return nil, err
	}
	return f, nil
}

// requests reads the client's frames, noting the Metadata and
// FindCoordinator requests.
func (c *kafkaConn) requests(r *bufio.Reader) func() ([]byte, error) {
	return func() ([]byte, error) {
		f, err := readFrame(r)
		if err != nil || len(f) < 12 {
			return f, err
		}
		key, ver := int16(binary.BigEndian.Uint16(f[4:])), int16(binary.BigEndian.Uint16(f[6:]))
		if key >= 0 && int(key) < len(c.k.seen) {
			c.k.seen[key].Add(1)
		}
		if kmsg.Key(key) == kmsg.Produce {
			c.k.mu.Lock()
			c.k.produced = append(c.k.produced, time.Now())
			c.k.mu.Unlock()
		}
		if k := kmsg.Key(key); k == kmsg.Metadata || k == kmsg.FindCoordinator {
			c.mu.Lock()
			c.pending[int32(binary.BigEndian.Uint32(f[8:]))] = [2]int16{key, ver}
			c.mu.Unlock()
		}
		return f, nil
	}
}

// responses reads the broker's frames, rewriting the answers to the noted
// requests.
func (c *kafkaConn) responses(r *bufio.Reader) func() ([]byte, error) {
	return func() ([]byte, error) {
		f, err := readFrame(r)
		if err != nil || len(f) < 8 {
			return f, err
		}
		corr := int32(binary.BigEndian.Uint32(f[4:]))
		c.mu.Lock()
		req, ok := c.pending[corr]
		delete(c.pending, corr)
		c.mu.Unlock()
		if !ok {
			return f, nil
		}
		out, err := c.k.rewrite(f, kmsg.Key(req[0]), req[1])
		if err != nil {
			return nil, fmt.Errorf("soak: kafka proxy: %w", err)
		}
		return out, nil
	}
}

// rewrite gives every broker a Metadata or FindCoordinator response names
// the proxy's address.
func (k *kafkaRewrite) rewrite(f []byte, key kmsg.Key, ver int16) ([]byte, error) {
	resp := kmsg.ResponseForKey(int16(key))
	resp.SetVersion(ver)
	body := 8 // size, correlation ID
	if resp.IsFlexible() {
		n, err := skipTags(f[body:])
		if err != nil {
			return nil, err
		}
		body += n
	}
	if err := resp.ReadFrom(f[body:]); err != nil {
		return nil, fmt.Errorf("read %s v%d response: %w", key.Name(), ver, err)
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = k.host, k.port
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Host != "" {
			r.Host, r.Port = k.host, k.port
		}
		for i := range r.Coordinators {
			if r.Coordinators[i].Host != "" {
				r.Coordinators[i].Host, r.Coordinators[i].Port = k.host, k.port
			}
		}
	}
	out := append(append([]byte(nil), f[:body]...), resp.AppendTo(nil)...)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// skipTags returns the length of the tagged-field section at b's start.
func skipTags(b []byte) (int, error) {
	n, off := binary.Uvarint(b)
	if off <= 0 {
		return 0, errors.New("bad tagged fields")
	}
	for range n {
		_, m := binary.Uvarint(b[off:])
		if m <= 0 {
			return 0, errors.New("bad tagged field")
		}
		off += m
		size, m := binary.Uvarint(b[off:])
		if m <= 0 || uint64(len(b)-off-m) < size {
			return 0, errors.New("bad tagged field")
		}
		off += m + int(size)
	}
	return off, nil
}
