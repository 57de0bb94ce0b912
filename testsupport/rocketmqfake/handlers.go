package rocketmqfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

type queueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type brokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

type routeData struct {
	OrderTopicConf string       `json:"orderTopicConf"`
	QueueDatas     []queueData  `json:"queueDatas"`
	BrokerDatas    []brokerData `json:"brokerDatas"`
}

func (s *Server) handleRoute(req *command) *command {
	topic := req.ExtFields["topic"]
	s.mu.Lock()
	if s.routeHook != nil && !s.routeHook(topic) {
		s.mu.Unlock()
		return nil
	}
	t := s.topicLocked(topic)
	n := 0
	if t != nil {
		n = len(t.queues)
	}
	s.mu.Unlock()
	if t == nil {
		return response(req, ResTopicNotExist, fmt.Sprintf("No topic route info in name server for the topic: %s", topic))
	}
	// The client parses brokerAddrs by hand (strip braces, split on "," and
	// the first ":"), so the compact form json.Marshal writes is required.
	body, err := json.Marshal(routeData{
		QueueDatas: []queueData{{BrokerName: s.cfg.brokerName, ReadQueueNums: n, WriteQueueNums: n, Perm: 6}},
		BrokerDatas: []brokerData{{
			Cluster: s.cfg.clusterName, BrokerName: s.cfg.brokerName,
			BrokerAddrs: map[string]string{"0": s.brokerAddr},
		}},
	})
	if err != nil {
		return response(req, ResSystemError, err.Error())
	}
	r := response(req, ResSuccess, "")
	r.Body = body
	return r
}

type heartbeat struct {
	ClientID        string `json:"clientID"`
	ConsumerDataSet []struct {
		GroupName string `json:"groupName"`
	} `json:"consumerDataSet"`
}

func (s *Server) handleHeartbeat(c *conn, req *command) *command {
	var hb heartbeat
	if err := json.Unmarshal(req.Body, &hb); err != nil || hb.ClientID == "" {
		return response(req, ResSystemError, "bad heartbeat body")
	}
	listed := make(map[string]bool, len(hb.ConsumerDataSet))
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName != "" {
			listed[cd.GroupName] = true
		}
	}
	s.mu.Lock()
	for g, ids := range s.groups {
		if !listed[g] {
			delete(ids, hb.ClientID)
			if len(ids) == 0 {
				delete(s.groups, g)
			}
		}
	}
	for g := range listed {
		if s.groups[g] == nil {
			s.groups[g] = make(map[string]*conn)
		}
		s.groups[g][hb.ClientID] = c
	}
	s.mu.Unlock()
	return response(req, ResSuccess, "")
}

// sendHeader is the part of a send request the fake uses; code 320 uses
// the short V2 names.
type sendHeader struct {
	group, topic string
	queue        int
	sysFlag      int32
	flag         int32
	born         int64
	props        string
}

func parseSendHeader(req *command) sendHeader {
	f := req.ExtFields
	name := func(long, short string) string {
		if int(req.Code) == CodeSendBatchMessage {
			return f[short]
		}
		return f[long]
	}
	atoi := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	return sendHeader{
		group:   name("producerGroup", "a"),
		topic:   name("topic", "b"),
		queue:   int(atoi(name("queueId", "e"))),
		sysFlag: int32(atoi(name("sysFlag", "f"))),
		born:    atoi(name("bornTimestamp", "g")),
		flag:    int32(atoi(name("flag", "h"))),
		props:   name("properties", "i"),
	}
}

func (s *Server) handleSend(c *conn, req *command, stopping <-chan struct{}) *command {
	h := parseSendHeader(req)
	batch := int(req.Code) == CodeSendBatchMessage
	var items []batchItem
	if batch {
		var err error
		if items, err = decodeBatch(req.Body); err != nil {
			return response(req, ResMessageIllegal, err.Error())
		}
	} else {
		items = []batchItem{{flag: h.flag, body: req.Body, props: h.props}}
	}
	bornIP, bornPort := hostPort(c.nc.RemoteAddr())
	msgs := make([]*stored, 0, len(items))
	for _, it := range items {
		sysFlag := h.sysFlag
		body := it.body
		if sysFlag&sysFlagCompressed != 0 {
			var err error
			if body, err = Inflate(it.body); err != nil {
				return response(req, ResMessageIllegal, err.Error())
			}
		}
		props := parseProperties(it.props)
		msgs = append(msgs, &stored{
			Message: Message{
				Topic: h.topic, Body: body, Compressed: sysFlag&sysFlagCompressed != 0,
				Tag: props[PropertyTags], Keys: splitKeys(props[PropertyKeys]), Properties: props,
				ProducerGroup: h.group, Batch: batch, SysFlag: sysFlag, Flag: it.flag, BornTimestamp: h.born,
			},
			rawBody: append([]byte(nil), it.body...), rawProps: it.props,
			bornHost: bornIP, bornPort: bornPort, storeHost: s.brokerIP, storePort: s.brokerPort,
		})
	}

	s.mu.Lock()
	hook := s.sendHook
	s.mu.Unlock()
	code, remark := ResSuccess, ""
	if hook != nil {
		var delay time.Duration
		s.hookMu.Lock()
		code, remark, delay = hook(h.topic, msgs[0].snapshot())
		s.hookMu.Unlock()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-stopping:
				t.Stop()
				return nil // the connection is being closed
			}
		}
	}
	switch code {
	case ResSuccess, ResFlushDiskTimeout, ResSlaveNotAvailable, ResFlushSlaveTimeout:
	default:
		return response(req, int16(code), remark)
	}

	s.mu.Lock()
	t := s.topicLocked(h.topic)
	if t == nil {
		s.mu.Unlock()
		return response(req, ResTopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.topic))
	}
	q := h.queue
	if q < 0 {
		q = 0
	}
	q %= len(t.queues)
	now := time.Now().UnixMilli()
	ids := make([]string, 0, len(msgs))
	first := int64(len(t.queues[q]))
	for _, m := range msgs {
		m.Queue = q
		m.QueueOffset = int64(len(t.queues[q]))
		m.CommitLogOffset = s.commitLog
		m.StoreTimestamp = now
		m.MsgID = offsetMsgID(s.brokerIP, s.brokerPort, s.commitLog)
		s.commitLog += int64(len(m.encode(nil)))
		t.queues[q] = append(t.queues[q], m)
		t.all = append(t.all, m)
		ids = append(ids, m.MsgID)
	}
	close(s.newData)
	s.newData = make(chan struct{})
	s.mu.Unlock()

	r := response(req, int16(code), remark)
	r.ExtFields["msgId"] = strings.Join(ids, ",")
	r.ExtFields["queueId"] = strconv.Itoa(q)
	r.ExtFields["queueOffset"] = strconv.FormatInt(first, 10)
	return r
}

// maxPullBytes bounds one pull response body.
const maxPullBytes = 4 << 20

func (s *Server) handlePull(req *command, stopping <-chan struct{}) *command {
	f := req.ExtFields
	group, topic := f["consumerGroup"], f["topic"]
	queue, _ := strconv.Atoi(f["queueId"])
	offset, _ := strconv.ParseInt(f["queueOffset"], 10, 64)
	maxNums, _ := strconv.Atoi(f["maxMsgNums"])
	if maxNums <= 0 {
		maxNums = 32
	}
	sysFlag, _ := strconv.Atoi(f["sysFlag"])
	suspend := s.cfg.longPoll
	if ms, err := strconv.ParseInt(f["suspendTimeoutMillis"], 10, 64); err == nil && ms > 0 {
		suspend = min(suspend, time.Duration(ms)*time.Millisecond)
	}
	if sysFlag&0x2 == 0 {
		suspend = 0
	}
	if sysFlag&0x1 != 0 {
		if commit, err := strconv.ParseInt(f["commitOffset"], 10, 64); err == nil && commit >= 0 {
			s.setOffset(group, topic, queue, commit)
		}
	}
	deadline := time.Now().Add(suspend)
	for {
		s.mu.Lock()
		t := s.topics[topic]
		if t == nil || queue < 0 || queue >= len(t.queues) {
			s.mu.Unlock()
			return response(req, ResTopicNotExist, fmt.Sprintf("topic[%s] queue %d not exist", topic, queue))
		}
		q := t.queues[queue]
		maxOff := int64(len(q))
		if offset < 0 || offset > maxOff {
			s.mu.Unlock()
			r := response(req, ResPullOffsetMoved, "offset out of range")
			setPullOffsets(r, int64(clamp(int(offset), 0, int(maxOff))), maxOff)
			return r
		}
		if offset < maxOff {
			var body []byte
			n := offset
			for ; n < maxOff && n-offset < int64(maxNums); n++ {
				if len(body) > maxPullBytes {
					break
				}
				body = q[n].encode(body)
			}
			s.mu.Unlock()
			r := response(req, ResSuccess, "FOUND")
			setPullOffsets(r, n, maxOff)
			r.Body = body
			return r
		}
		wait := s.newData
		s.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			r := response(req, ResPullNotFound, "no new message")
			setPullOffsets(r, offset, maxOff)
			return r
		}
		timer := time.NewTimer(left)
		select {
		case <-wait:
			timer.Stop()
		case <-timer.C:
		case <-stopping:
			timer.Stop()
			return response(req, ResServiceNotAvailable, "broker is stopping")
		}
	}
}

func setPullOffsets(r *command, next, maxOff int64) {
	r.ExtFields["nextBeginOffset"] = strconv.FormatInt(next, 10)
	r.ExtFields["minOffset"] = "0"
	r.ExtFields["maxOffset"] = strconv.FormatInt(maxOff, 10)
	r.ExtFields["suggestWhichBrokerId"] = "0"
}

func (s *Server) setOffset(group, topic string, queue int, off int64) {
	if group == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.offsets[group] == nil {
		s.offsets[group] = make(map[qkey]int64)
	}
	s.offsets[group][qkey{topic, queue}] = off
}

func (s *Server) handleQueryOffset(req *command) *command {
	f := req.ExtFields
	queue, _ := strconv.Atoi(f["queueId"])
	off, ok := s.ConsumerOffset(f["consumerGroup"], f["topic"], queue)
	if !ok {
		return response(req, ResQueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
	}
	r := response(req, ResSuccess, "")
	r.ExtFields["offset"] = strconv.FormatInt(off, 10)
	return r
}

func (s *Server) handleUpdateOffset(req *command) *command {
	f := req.ExtFields
	queue, _ := strconv.Atoi(f["queueId"])
	off, err := strconv.ParseInt(f["commitOffset"], 10, 64)
	if err != nil {
		return response(req, ResSystemError, "bad commitOffset")
	}
	s.setOffset(f["consumerGroup"], f["topic"], queue, off)
	return response(req, ResSuccess, "")
}

// queueLen returns the length of a queue, or false when there is none.
func (s *Server) queueLen(topic string, queue int) ([]*stored, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.topics[topic]
	if t == nil || queue < 0 || queue >= len(t.queues) {
		return nil, false
	}
	return t.queues[queue], true
}

func (s *Server) handleMaxOffset(req *command) *command {
	queue, _ := strconv.Atoi(req.ExtFields["queueId"])
	q, ok := s.queueLen(req.ExtFields["topic"], queue)
	r := response(req, ResSuccess, "")
	if !ok {
		r = response(req, ResTopicNotExist, "topic or queue not exist")
	}
	r.ExtFields["offset"] = strconv.Itoa(len(q))
	return r
}

func (s *Server) handleSearchOffset(req *command) *command {
	queue, _ := strconv.Atoi(req.ExtFields["queueId"])
	ts, _ := strconv.ParseInt(req.ExtFields["timestamp"], 10, 64)
	q, ok := s.queueLen(req.ExtFields["topic"], queue)
	r := response(req, ResSuccess, "")
	if !ok {
		r = response(req, ResTopicNotExist, "topic or queue not exist")
	}
	off := len(q)
	s.mu.Lock()
	for i, m := range q { // stored messages are immutable once appended
		if m.StoreTimestamp >= ts {
			off = i
			break
		}
	}
	s.mu.Unlock()
	r.ExtFields["offset"] = strconv.Itoa(off)
	return r
}

func (s *Server) handleConsumerList(req *command, stopping <-chan struct{}) *command {
	if d := s.cfg.listDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-stopping:
			t.Stop()
			return nil
		}
	}
	ids := s.ConsumerIDs(req.ExtFields["consumerGroup"])
	if len(ids) == 0 {
		return response(req, ResSystemError, "no consumer for this group")
	}
	body, err := json.Marshal(map[string][]string{"consumerIdList": ids})
	if err != nil {
		return response(req, ResSystemError, err.Error())
	}
	r := response(req, ResSuccess, "")
	r.Body = body
	return r
}

func (s *Server) handleLock(req *command) *command {
	var body struct {
		MQSet json.RawMessage `json:"mqSet"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return response(req, ResSystemError, "bad lock body")
	}
	if len(body.MQSet) == 0 {
		body.MQSet = json.RawMessage("[]")
	}
	out, err := json.Marshal(map[string]json.RawMessage{"lockOKMQSet": body.MQSet})
	if err != nil {
		return response(req, ResSystemError, err.Error())
	}
	r := response(req, ResSuccess, "")
	r.Body = out
	return r
}
