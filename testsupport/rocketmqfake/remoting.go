package rocketmqfake

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Request codes the fake answers (RocketMQ RequestCode numbers).
const (
	CodeSendMessage             = 10
	CodePullMessage             = 11
	CodeQueryConsumerOffset     = 14
	CodeUpdateConsumerOffset    = 15
	CodeSearchOffsetByTimestamp = 29
	CodeGetMaxOffset            = 30
	CodeGetMinOffset            = 31
	CodeHeartbeat               = 34
	CodeConsumerSendMsgBack     = 36
	CodeGetConsumerListByGroup  = 38
	CodeLockBatchMQ             = 41
	CodeUnlockBatchMQ           = 42
	CodeGetRouteInfoByTopic     = 105
	CodeSendBatchMessage        = 320
)

// Response codes (RocketMQ ResponseCode numbers) useful with SetSendHook.
const (
	ResSuccess                 = 0
	ResSystemError             = 1
	ResSystemBusy              = 2
	ResRequestCodeNotSupported = 3
	ResFlushDiskTimeout        = 10
	ResSlaveNotAvailable       = 11
	ResFlushSlaveTimeout       = 12
	ResMessageIllegal          = 13
	ResServiceNotAvailable     = 14
	ResNoPermission            = 16
	ResTopicNotExist           = 17
	ResPullNotFound            = 19
	ResPullRetryImmediately    = 20
	ResPullOffsetMoved         = 21
	ResQueryNotFound           = 22
)

// maxFrame bounds a frame the fake accepts (the client's own limit is far
// above any test message; this only protects against garbage).
const maxFrame = 64 << 20

// command is one remoting command (request or response).
type command struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
	Body      []byte            `json:"-"`
}

// wireHeader is the decoding shape: the client writes language as a JSON
// string, but be lenient about its type.
type wireHeader struct {
	Code      int16             `json:"code"`
	Language  json.RawMessage   `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// readCommand reads one frame:
// int32 len | byte serializeType | uint24 headerLen | header | body.
func readCommand(r io.Reader) (*command, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n < 4 || n > maxFrame {
		return nil, fmt.Errorf("read frame: bad length %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read frame: %w", err)
	}
	if buf[0] != 0 {
		return nil, fmt.Errorf("read frame: serialize type %d not supported (JSON only)", buf[0])
	}
	hlen := int(buf[1])<<16 | int(buf[2])<<8 | int(buf[3])
	if 4+hlen > len(buf) {
		return nil, errors.New("read frame: header length beyond frame")
	}
	var h wireHeader
	if err := json.Unmarshal(buf[4:4+hlen], &h); err != nil {
		return nil, fmt.Errorf("read frame: decode header: %w", err)
	}
	if h.ExtFields == nil {
		h.ExtFields = map[string]string{}
	}
	return &command{
		Code:      h.Code,
		Version:   h.Version,
		Opaque:    h.Opaque,
		Flag:      h.Flag,
		Remark:    h.Remark,
		ExtFields: h.ExtFields,
		Body:      buf[4+hlen:],
	}, nil
}

// encode renders c as one frame.
func (c *command) encode() ([]byte, error) {
	header, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	frame := make([]byte, 8, 8+len(header)+len(c.Body))
	binary.BigEndian.PutUint32(frame[0:4], uint32(4+len(header)+len(c.Body)))
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(header))) // top byte 0 = JSON
	frame = append(frame, header...)
	frame = append(frame, c.Body...)
	return frame, nil
}

// response builds the answer to req: flag bit 0 set, opaque echoed.
func response(req *command, code int16, remark string) *command {
	return &command{
		Code:      code,
		Language:  "GO",
		Version:   317,
		Opaque:    req.Opaque,
		Flag:      1,
		Remark:    remark,
		ExtFields: map[string]string{},
	}
}
