package rocketmqfake

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

// SendHook decides the answer to a send request before anything is stored.
// It is called once per request with the request's topic and its first
// message (for a batch, the first of the batch; Queue and offsets are not
// yet assigned). It returns the response code, its remark and a delay
// before the answer. Calls are serialized (never concurrent), so a hook may
// keep plain state; the delay is waited out after the call. Codes 0, 10, 11
// and 12 (the ones the client treats as "sent" with a status) store the
// messages; any other code stores nothing.
type SendHook func(topic string, msg Message) (code int, remark string, delay time.Duration)

// RouteHook is called with the topic of each route query (105) before it
// is answered; when it returns false the query gets no answer at all, as
// from a name server that is down or too slow (the client times out).
// Calls are serialized; h must not call the Server's methods.
type RouteHook func(topic string) (answer bool)

// Option configures a Server.
type Option func(*config)

type config struct {
	topics        []topicSpec
	autoCreate    bool
	defaultQueues int
	brokerName    string
	clusterName   string
	longPoll      time.Duration
	listDelay     time.Duration
	accessKey     string
	secretKey     string
}

type topicSpec struct {
	name   string
	queues int
}

// WithTopic creates topic with the given number of queues (at least 1).
func WithTopic(name string, queues int) Option {
	return func(c *config) { c.topics = append(c.topics, topicSpec{name, queues}) }
}

// WithAutoCreateTopics makes the name server create an unknown topic with
// queues queues when a client asks for its route, and the broker create it
// on a send. Without it an unknown topic gets TOPIC_NOT_EXIST (17).
func WithAutoCreateTopics(queues int) Option {
	return func(c *config) {
		c.autoCreate = true
		if queues > 0 {
			c.defaultQueues = queues
		}
	}
}

// WithAutoCreate switches topic auto-creation on or off; auto-created
// topics get 4 queues (see WithAutoCreateTopics).
func WithAutoCreate(on bool) Option {
	return func(c *config) { c.autoCreate = on }
}

// WithBrokerName sets the broker name in routes (default "broker-a").
func WithBrokerName(name string) Option {
	return func(c *config) { c.brokerName = name }
}

// WithLongPollTimeout sets how long a pull with nothing to return is held
// before NOT_FOUND is answered (default 1s; the client's own suspend time
// is an upper bound too).
func WithLongPollTimeout(d time.Duration) Option {
	return func(c *config) { c.longPoll = d }
}

// WithConsumerListDelay sets how long answers to GET_CONSUMER_LIST_BY_GROUP
// (38) are held (default 100ms, 0 for none).
//
// The delay works around a data race inside rocketmq-client-go v2.1.2 that
// the race detector reports in about one push consumer start in five: the
// first rebalance writes SubscriptionData.SubVersion
// (pushConsumer.messageQueueChanged) while the client's first route refresh,
// 10 ms after start, reads it (rmqClient.UpdateTopicRouteInfo) with nothing
// ordering the two. Holding the consumer list makes the rebalance's later
// requests take the client's connection lock after the route refresh did,
// which orders them.
func WithConsumerListDelay(d time.Duration) Option {
	return func(c *config) { c.listDelay = d }
}

type qkey struct {
	topic string
	queue int
}

type topicState struct {
	queues [][]*stored
	all    []*stored // in store order
}

// Server is a running fake: one name server and one broker (master, id 0),
// each on its own 127.0.0.1 port.
type Server struct {
	cfg        config
	nsAddr     string
	brokerAddr string
	brokerIP   [4]byte
	brokerPort int32

	// life serializes Stop, Restart and Close.
	life sync.Mutex
	// hookMu serializes SendHook calls.
	hookMu sync.Mutex

	mu          sync.Mutex
	running     bool
	closed      bool
	stopping    chan struct{} // closed by Stop
	listeners   []net.Listener
	conns       map[*conn]struct{}
	topics      map[string]*topicState
	autoCreate  bool
	commitLog   int64
	counts      map[int]int
	sendHook    SendHook
	routeHook   RouteHook
	groups      map[string]map[string]*conn // consumer group → client id → registering conn
	offsets     map[string]map[qkey]int64   // consumer group → queue → offset
	newData     chan struct{}               // closed and replaced on every store
	aclFailures int

	wg  sync.WaitGroup // accept and read loops
	hwg sync.WaitGroup // request handlers
}

// Start starts a fake name server and broker on 127.0.0.1 ports chosen by
// the system.
func Start(opts ...Option) (*Server, error) {
	cfg := config{defaultQueues: 4, brokerName: "broker-a", clusterName: "DefaultCluster", longPoll: time.Second, listDelay: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.longPoll <= 0 {
		return nil, errors.New("rocketmqfake: long poll timeout must be positive")
	}
	s := &Server{
		cfg:        cfg,
		topics:     make(map[string]*topicState),
		autoCreate: cfg.autoCreate,
		counts:     make(map[int]int),
		groups:     make(map[string]map[string]*conn),
		offsets:    make(map[string]map[qkey]int64),
		newData:    make(chan struct{}),
		conns:      make(map[*conn]struct{}),
	}
	for _, t := range cfg.topics {
		if err := s.CreateTopic(t.name, t.queues); err != nil {
			return nil, err
		}
	}
	ns, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rocketmqfake: listen name server: %w", err)
	}
	br, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("rocketmqfake: listen broker: %w", err)
	}
	s.nsAddr = ns.Addr().String()
	s.brokerAddr = br.Addr().String()
	s.brokerIP, s.brokerPort = hostPort(br.Addr())
	s.serve(ns, br)
	return s, nil
}

// serve starts accepting on the listeners. Callers hold life (or own s).
func (s *Server) serve(ls ...net.Listener) {
	s.mu.Lock()
	s.running = true
	s.stopping = make(chan struct{})
	s.listeners = ls
	s.mu.Unlock()
	for _, l := range ls {
		s.wg.Add(1)
		go s.accept(l)
	}
}

// NameServerAddr is the name server's "127.0.0.1:port" (an IP literal, as
// the client requires).
func (s *Server) NameServerAddr() string { return s.nsAddr }

// BrokerAddr is the broker's "127.0.0.1:port".
func (s *Server) BrokerAddr() string { return s.brokerAddr }

// BrokerName is the broker name used in routes.
func (s *Server) BrokerName() string { return s.cfg.brokerName }

// CreateTopic creates a topic with queues queues. Creating an existing
// topic with the same queue count is a no-op.
func (s *Server) CreateTopic(name string, queues int) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("rocketmqfake: create topic %q: name must have 1 to 255 bytes", name)
	}
	if queues < 1 {
		return fmt.Errorf("rocketmqfake: create topic %q: queues must be at least 1, got %d", name, queues)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.topics[name]; ok {
		if len(t.queues) != queues {
			return fmt.Errorf("rocketmqfake: create topic %q: exists with %d queues", name, len(t.queues))
		}
		return nil
	}
	s.topics[name] = &topicState{queues: make([][]*stored, queues)}
	return nil
}

// SetAutoCreateTopics switches topic auto-creation on or off at run time.
func (s *Server) SetAutoCreateTopics(on bool) {
	s.mu.Lock()
	s.autoCreate = on
	s.mu.Unlock()
}

// topicLocked returns the topic, creating it when auto-creation is on.
func (s *Server) topicLocked(name string) *topicState {
	t := s.topics[name]
	if t == nil && s.autoCreate && name != "" && len(name) <= 255 {
		t = &topicState{queues: make([][]*stored, s.cfg.defaultQueues)}
		s.topics[name] = t
	}
	return t
}

// Messages returns a snapshot of the topic's messages in store order, with
// bodies inflated.
func (s *Server) Messages(topic string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.topics[topic]
	if t == nil {
		return nil
	}
	out := make([]Message, 0, len(t.all))
	for _, m := range t.all {
		out = append(out, m.snapshot())
	}
	return out
}

// MessagesSince returns the topic's messages after the first n in store
// order (as Messages does), and a channel closed when the fake stores
// anything more: a reader follows a topic without copying it again, and
// waits on the channel when it got nothing.
func (s *Server) MessagesSince(topic string, n int) ([]Message, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	if t := s.topics[topic]; t != nil && n < len(t.all) {
		out = make([]Message, 0, len(t.all)-max(n, 0))
		for _, m := range t.all[max(n, 0):] {
			out = append(out, m.snapshot())
		}
	}
	return out, s.newData
}

// Requests returns how many requests with this code the fake has received
// (on both ports, since Start).
func (s *Server) Requests(code int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[code]
}

// SetSendHook installs h (nil removes it).
func (s *Server) SetSendHook(h SendHook) {
	s.mu.Lock()
	s.sendHook = h
	s.mu.Unlock()
}

// SetRouteHook installs h (nil removes it).
func (s *Server) SetRouteHook(h RouteHook) {
	s.mu.Lock()
	s.routeHook = h
	s.mu.Unlock()
}

// ConsumerIDs returns the client ids that sent a heartbeat for group over
// a connection that is still open, sorted.
func (s *Server) ConsumerIDs(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consumerIDsLocked(group)
}

func (s *Server) consumerIDsLocked(group string) []string {
	ids := make([]string, 0, len(s.groups[group]))
	for id := range s.groups[group] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ConsumerOffset returns the offset group committed for a queue.
func (s *Server) ConsumerOffset(group, topic string, queue int) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.offsets[group][qkey{topic, queue}]
	return off, ok
}

// Stop closes the listeners and every accepted connection (a dead broker
// and name server), and waits until all of the fake's goroutines are gone.
// Pulls held for long polling, and pulls that arrive while it stops, are
// answered SERVICE_NOT_AVAILABLE (the push consumer then retries after 3 s
// instead of waiting 30 s for its pull's timeout); other requests that
// arrive meanwhile, and sends held by a SendHook delay, get no answer.
// Stored messages, offsets and topics survive. Stop on a stopped server is
// a no-op.
func (s *Server) Stop() {
	s.life.Lock()
	defer s.life.Unlock()
	s.stop()
}

func (s *Server) stop() {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return
	}
	s.running = false
	close(s.stopping)
	for _, l := range s.listeners {
		l.Close()
	}
	s.listeners = nil
	s.mu.Unlock()
	// Let the handlers finish first: held pulls answer
	// SERVICE_NOT_AVAILABLE, so that the client backs off for 3 s instead
	// of waiting 30 s for an answer on a closed connection. Requests that
	// arrive from now on are dropped unanswered, as by a dead broker.
	s.hwg.Wait()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Restart listens again on the same two ports after Stop.
func (s *Server) Restart() error {
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	running, closed := s.running, s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("rocketmqfake: restart: server closed")
	}
	if running {
		return errors.New("rocketmqfake: restart: server running")
	}
	ns, err := net.Listen("tcp", s.nsAddr)
	if err != nil {
		return fmt.Errorf("rocketmqfake: restart name server on %s: %w", s.nsAddr, err)
	}
	br, err := net.Listen("tcp", s.brokerAddr)
	if err != nil {
		ns.Close()
		return fmt.Errorf("rocketmqfake: restart broker on %s: %w", s.brokerAddr, err)
	}
	s.serve(ns, br)
	return nil
}

// Close stops the server for good. It is safe to call more than once.
func (s *Server) Close() {
	s.life.Lock()
	defer s.life.Unlock()
	s.stop()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *Server) accept(l net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := l.Accept()
		if err != nil {
			return // closed by stop
		}
		c := &conn{nc: nc}
		s.mu.Lock()
		if !s.running {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.readLoop(c)
	}
}

// conn is one accepted connection; writes are serialized because requests
// are answered concurrently.
type conn struct {
	nc  net.Conn
	wmu sync.Mutex
}

func (c *conn) write(cmd *command) {
	frame, err := cmd.encode()
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.nc.Write(frame) // a failed write means the peer is gone
}

func (s *Server) readLoop(c *conn) {
	defer s.wg.Done()
	defer s.dropConn(c)
	for {
		req, err := readCommand(c.nc)
		if err != nil {
			return
		}
		if req.Flag&1 != 0 {
			continue // a response to a request we never send
		}
		s.mu.Lock()
		s.counts[int(req.Code)]++
		if !s.running {
			s.mu.Unlock()
			if int(req.Code) == CodePullMessage {
				// Stopping. The client (v2.1.2) does not fail a request
				// whose connection dies: an unanswered pull would stall
				// its queue for the pull's 30 s timeout. Answer it like
				// the held pulls, so the consumer backs off 3 s.
				c.write(response(req, ResServiceNotAvailable, "broker is stopping"))
			}
			continue // stopping: a dead broker does not answer
		}
		stopping := s.stopping
		s.hwg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.hwg.Done()
			if resp := s.handle(c, req, stopping); resp != nil {
				c.write(resp)
			}
		}()
	}
}

// dropConn forgets c and the consumer ids it registered.
func (s *Server) dropConn(c *conn) {
	c.nc.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	for g, ids := range s.groups {
		for id, owner := range ids {
			if owner == c {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(s.groups, g)
		}
	}
}

// handle answers one request; nil means no answer.
func (s *Server) handle(c *conn, req *command, stopping <-chan struct{}) *command {
	switch int(req.Code) {
	case CodeGetRouteInfoByTopic:
		return s.handleRoute(req)
	case CodeHeartbeat:
		return s.handleHeartbeat(c, req)
	case CodeSendMessage, CodeSendBatchMessage:
		if why := s.checkACL(req); why != "" {
			s.mu.Lock()
			s.aclFailures++
			s.mu.Unlock()
			return response(req, ResNoPermission, why)
		}
		return s.handleSend(c, req, stopping)
	case CodePullMessage:
		return s.handlePull(req, stopping)
	case CodeQueryConsumerOffset:
		return s.handleQueryOffset(req)
	case CodeUpdateConsumerOffset:
		return s.handleUpdateOffset(req)
	case CodeGetMaxOffset:
		return s.handleMaxOffset(req)
	case CodeGetMinOffset:
		r := response(req, ResSuccess, "")
		r.ExtFields["offset"] = "0"
		return r
	case CodeSearchOffsetByTimestamp:
		return s.handleSearchOffset(req)
	case CodeGetConsumerListByGroup:
		return s.handleConsumerList(req, stopping)
	case CodeLockBatchMQ:
		return s.handleLock(req)
	case CodeUnlockBatchMQ, CodeConsumerSendMsgBack:
		return response(req, ResSuccess, "")
	default:
		return response(req, ResRequestCodeNotSupported, fmt.Sprintf("request type %d not supported", req.Code))
	}
}

// clamp keeps n within [lo, hi].
func clamp(n, lo, hi int) int {
	return min(max(n, lo), hi)
}
