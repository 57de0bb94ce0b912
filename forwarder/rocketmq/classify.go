package rocketmq

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/forwarder"
)

// Response codes of the remoting protocol that decide a classification.
const (
	codeSuccess         = 0
	codeSystemError     = 1
	codeSystemBusy      = 2
	codeMessageIllegal  = 13
	codeServiceNotAvail = 14
	codeNoPermission    = 16
	codeTopicNotExist   = 17
)

// codePattern matches the client's "CODE: 16, DESC: ..." errors.
var codePattern = regexp.MustCompile(`CODE: (-?\d+), DESC: `)

// BrokerCode returns the response code in an error the client made from a
// broker's answer, and whether there was one.
func BrokerCode(err error) (int, bool) {
	if err == nil {
		return 0, false
	}
	m := codePattern.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	n, convErr := strconv.Atoi(m[1])
	return n, convErr == nil
}

// classify wraps a SendSync error with the topic and marks what no retry can
// fix as forwarder.Permanent.
func (t *Target) classify(ctx context.Context, topic string, err error) error {
	if code, ok := BrokerCode(err); ok {
		switch code {
		case codeNoPermission:
			return forwarder.Permanent(fmt.Errorf("rocketmq broker refused topic %q: NO_PERMISSION (topic or broker not writable): %w", topic, err))
		case codeMessageIllegal:
			return forwarder.Permanent(fmt.Errorf("rocketmq broker rejected the message for topic %q as illegal: %w", topic, err))
		case codeTopicNotExist:
			return forwarder.Permanent(fmt.Errorf("rocketmq topic %q does not exist on the broker: %w", topic, err))
		case codeSystemBusy:
			// Flow control ("[TIMEOUT_CLEAN_QUEUE]broker busy",
			// "[PC_SYNCHRONIZED]broker busy"...): the broker asks to slow
			// down. The forwarder pauses the target and puts the message
			// off without spending an attempt.
			return forwarder.Throttled(fmt.Errorf("rocketmq broker busy (flow control) for topic %q: %w", topic, err))
		default: // SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, unknown
			return fmt.Errorf("send to rocketmq topic %q: %w", topic, err)
		}
	}
	if noRoute(err) {
		// The client says this both when the name server does not know the
		// topic and when no name server answered. Ask them ourselves.
		switch known, perr := probeRoute(ctx, t.nameServers, topic); {
		case perr != nil:
			return fmt.Errorf("send to rocketmq topic %q: no route, and the name servers could not be asked (%v): %w", topic, perr, err)
		case !known:
			return forwarder.Permanent(fmt.Errorf("rocketmq topic %q does not exist: the name servers have no route for it (and no auto-creation): %w", topic, err))
		default:
			return noRouteYet(topic, err)
		}
	}
	// Timeouts ("request timeout"), connection errors and everything else.
	return fmt.Errorf("send to rocketmq topic %q: %w", topic, err)
}

// noRoute tells whether err is the client's "no route for the topic":
// no name server answered its route query, or none knew the topic.
func noRoute(err error) bool {
	return strings.Contains(err.Error(), "route info not found")
}

// noRouteYet is the retryable error of a send that found no route while
// the name servers know the topic.
func noRouteYet(topic string, err error) error {
	return fmt.Errorf("send to rocketmq topic %q: no route yet (the name server has one now): %w", topic, err)
}

// probeRoute asks the name servers for topic's route (GET_ROUTEINFO_BY_TOPIC,
// 105) over the remoting protocol. known is true when one of them has a
// route, false when one of them answered TOPIC_NOT_EXIST and none has one;
// err is set when none answered.
func probeRoute(ctx context.Context, addrs []string, topic string) (known bool, err error) {
	var errs []error
	answered := false
	for _, a := range addrs {
		code, err := routeCode(ctx, a, topic)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
			continue
		}
		switch code {
		case codeSuccess:
			return true, nil
		case codeTopicNotExist:
			answered = true
		default:
			errs = append(errs, fmt.Errorf("%s: answered code %d", a, code))
		}
	}
	if answered {
		return false, nil
	}
	return false, errors.Join(errs...)
}

const probeTimeout = 3 * time.Second

// routeCode sends one route request to a name server and returns the
// response code.
func routeCode(ctx context.Context, addr, topic string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dial name server: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	const opaque = 1
	header, err := json.Marshal(map[string]any{
		"code": 105, "language": "GO", "version": 317, "opaque": opaque, "flag": 0,
		"extFields": map[string]string{"topic": topic},
	})
	if err != nil {
		return 0, fmt.Errorf("encode route request: %w", err)
	}
	frame := make([]byte, 8, 8+len(header))
	binary.BigEndian.PutUint32(frame[0:4], uint32(4+len(header)))
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(header))) // serialize type 0: JSON
	frame = append(frame, header...)
	if _, err := conn.Write(frame); err != nil {
		return 0, fmt.Errorf("write route request: %w", err)
	}
	for {
		var lenBuf [4]byte
		if _, err := io.ReadFull(conn, lenBuf[:]); err != nil {
			return 0, fmt.Errorf("read route response: %w", err)
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n < 4 || n > 16<<20 {
			return 0, fmt.Errorf("read route response: bad frame length %d", n)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(conn, buf); err != nil {
			return 0, fmt.Errorf("read route response: %w", err)
		}
		hlen := int(buf[1])<<16 | int(buf[2])<<8 | int(buf[3])
		if 4+hlen > len(buf) {
			return 0, errors.New("read route response: header beyond frame")
		}
		h := buf[4 : 4+hlen]
		var code, op int
		switch buf[0] {
		case 0: // JSON
			var hdr struct {
				Code   int `json:"code"`
				Opaque int `json:"opaque"`
				Flag   int `json:"flag"`
			}
			if err := json.Unmarshal(h, &hdr); err != nil {
				return 0, fmt.Errorf("decode route response: %w", err)
			}
			if hdr.Flag&1 == 0 {
				continue // a request from the server, not our answer
			}
			code, op = hdr.Code, hdr.Opaque
		case 1: // RocketMQ binary: code int16, language byte, version int16, opaque int32, flag int32
			if len(h) < 13 {
				return 0, errors.New("decode route response: short binary header")
			}
			if binary.BigEndian.Uint32(h[9:13])&1 == 0 {
				continue
			}
			code = int(int16(binary.BigEndian.Uint16(h[0:2])))
			op = int(int32(binary.BigEndian.Uint32(h[5:9])))
		default:
			return 0, fmt.Errorf("decode route response: unknown serialize type %d", buf[0])
		}
		if op != opaque {
			continue
		}
		return code, nil
	}
}
