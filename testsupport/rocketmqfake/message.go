package rocketmqfake

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"strconv"
	"strings"
)

// Property names the client sets (primitive/message.go).
const (
	PropertyTags    = "TAGS"
	PropertyKeys    = "KEYS"
	PropertyUniqKey = "UNIQ_KEY"
)

const (
	sysFlagCompressed = 0x1
	magicCodeV1       = 0xDAA320A7
	nameValueSep      = 0x01
	propertySep       = 0x02
)

// Message is a stored message as tests see it.
type Message struct {
	Topic       string
	Queue       int
	QueueOffset int64
	// CommitLogOffset is the message's position in the broker's log.
	CommitLogOffset int64
	// MsgID is the broker's offset message id (32 upper-case hex characters).
	MsgID string
	// Body is the message body, inflated when the producer compressed it.
	Body []byte
	// Compressed tells whether the producer sent the body zlib-compressed.
	Compressed bool
	// Tag is the TAGS property.
	Tag string
	// Keys is the KEYS property split on spaces.
	Keys []string
	// Properties holds every property, including TAGS, KEYS and UNIQ_KEY.
	Properties map[string]string
	// ProducerGroup is the sending producer's group.
	ProducerGroup string
	// Batch tells whether the message came in a batch (code 320).
	Batch          bool
	SysFlag        int32
	Flag           int32
	BornTimestamp  int64
	StoreTimestamp int64
}

// UniqKey returns the client's message id (the UNIQ_KEY property), which
// is what SendResult.MsgID and MessageExt.MsgId carry for single sends.
func (m Message) UniqKey() string { return m.Properties[PropertyUniqKey] }

// stored is a message with its wire form, as it is handed out on pull.
type stored struct {
	Message
	rawBody   []byte // as sent (compressed when sysFlag&1)
	rawProps  string
	bornHost  [4]byte
	bornPort  int32
	storeHost [4]byte
	storePort int32
}

func (s *stored) snapshot() Message {
	m := s.Message
	m.Body = bytes.Clone(m.Body)
	m.Keys = append([]string(nil), m.Keys...)
	m.Properties = maps.Clone(m.Properties)
	return m
}

// parseProperties reads "k\x01v\x02k\x01v\x02".
func parseProperties(s string) map[string]string {
	props := make(map[string]string)
	for item := range strings.SplitSeq(s, string(rune(propertySep))) {
		k, v, ok := strings.Cut(item, string(rune(nameValueSep)))
		if ok && k != "" {
			props[k] = v
		}
	}
	return props
}

func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Fields(s)
}

// Inflate undoes the producer's zlib compression.
func Inflate(b []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("inflate body: %w", err)
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("inflate body: %w", err)
	}
	return out, nil
}

// batchItem is one message of a batch body.
type batchItem struct {
	flag  int32
	body  []byte
	props string
}

// decodeBatch reads the concatenated Message.Marshal records:
// totalSize | magic | bodyCRC | flag | bodyLen | body | int16 propsLen | props.
func decodeBatch(b []byte) ([]batchItem, error) {
	var items []batchItem
	for len(b) > 0 {
		if len(b) < 20 {
			return nil, errors.New("decode batch: truncated record header")
		}
		total := int(binary.BigEndian.Uint32(b[0:4]))
		if total < 22 || total > len(b) {
			return nil, fmt.Errorf("decode batch: bad record size %d", total)
		}
		rec := b[:total]
		flag := int32(binary.BigEndian.Uint32(rec[12:16]))
		bodyLen := int(binary.BigEndian.Uint32(rec[16:20]))
		if 20+bodyLen+2 > total {
			return nil, errors.New("decode batch: body beyond record")
		}
		body := rec[20 : 20+bodyLen]
		propsLen := int(binary.BigEndian.Uint16(rec[20+bodyLen : 22+bodyLen]))
		if 22+bodyLen+propsLen > total {
			return nil, errors.New("decode batch: properties beyond record")
		}
		props := string(rec[22+bodyLen : 22+bodyLen+propsLen])
		items = append(items, batchItem{flag: flag, body: body, props: props})
		b = b[total:]
	}
	if len(items) == 0 {
		return nil, errors.New("decode batch: empty batch")
	}
	return items, nil
}

// encode appends the MessageExt layout primitive.DecodeMessage reads.
func (s *stored) encode(dst []byte) []byte {
	topic := s.Topic
	if len(topic) > 255 {
		topic = topic[:255]
	}
	props := s.rawProps
	if len(props) > 65535 {
		props = props[:65535]
	}
	size := 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(s.rawBody) + 1 + len(topic) + 2 + len(props)
	var b [8]byte
	put32 := func(v uint32) { binary.BigEndian.PutUint32(b[:4], v); dst = append(dst, b[:4]...) }
	put64 := func(v uint64) { binary.BigEndian.PutUint64(b[:8], v); dst = append(dst, b[:8]...) }
	put32(uint32(size))
	put32(magicCodeV1)
	put32(crc32.ChecksumIEEE(s.rawBody))
	put32(uint32(s.Queue))
	put32(uint32(s.Flag))
	put64(uint64(s.QueueOffset))
	put64(uint64(s.CommitLogOffset))
	put32(uint32(s.SysFlag &^ 0x30)) // hosts are IPv4
	put64(uint64(s.BornTimestamp))
	dst = append(dst, s.bornHost[:]...)
	put32(uint32(s.bornPort))
	put64(uint64(s.StoreTimestamp))
	dst = append(dst, s.storeHost[:]...)
	put32(uint32(s.storePort))
	put32(0) // reconsumeTimes
	put64(0) // preparedTransactionOffset
	put32(uint32(len(s.rawBody)))
	dst = append(dst, s.rawBody...)
	dst = append(dst, byte(len(topic)))
	dst = append(dst, topic...)
	binary.BigEndian.PutUint16(b[:2], uint16(len(props)))
	dst = append(dst, b[:2]...)
	dst = append(dst, props...)
	return dst
}

// offsetMsgID is the Java-style id: hex(storeIP(4) storePort(int32) commitLogOffset(int64)).
func offsetMsgID(ip [4]byte, port int32, commitLog int64) string {
	var b [16]byte
	copy(b[:4], ip[:])
	binary.BigEndian.PutUint32(b[4:8], uint32(port))
	binary.BigEndian.PutUint64(b[8:16], uint64(commitLog))
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// hostPort splits an address into an IPv4 and a port (zeros when unknown).
func hostPort(addr net.Addr) ([4]byte, int32) {
	var ip [4]byte
	if addr == nil {
		return ip, 0
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ip, 0
	}
	if v4 := net.ParseIP(host).To4(); v4 != nil {
		copy(ip[:], v4)
	}
	p, _ := strconv.Atoi(port)
	return ip, int32(p)
}
