package checkback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
)

// ErrUnreadable marks an answer that was received but is not the exact
// shape of the endpoint's protocol: it is unknown, never commit, and counts
// as an error.
var ErrUnreadable = errors.New("unreadable check-back answer")

// HTTPAnswer is the answer to the HTTP shape, TrustMessage's:
// {"status":"SUCCESS","data":{"messageKey":key,"messageStatus":2|3|1}}.
func HTTPAnswer(key string, d Decision) []byte {
	b, _ := json.Marshal(httpAnswer{Status: "SUCCESS", Data: &httpData{MessageKey: &key, MessageStatus: d.Status()}}) // cannot fail
	return b
}

type httpAnswer struct {
	Status string    `json:"status"`
	Data   *httpData `json:"data"`
}

type httpData struct {
	MessageKey    *string `json:"messageKey"`
	MessageStatus int     `json:"messageStatus"`
}

// TripleAnswer is the answer to a Triple call: the bare integer 2, 3 or 1
// (served with Content-Type: application/json).
func TripleAnswer(d Decision) []byte { return strconv.AppendInt(nil, int64(d.Status()), 10) }

// JSON-RPC 2.0 error codes.
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *int            `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// JSONRPCAnswer is the JSON-RPC 2.0 answer to request id:
// {"jsonrpc":"2.0","id":id,"result":2|3|1}. An empty id is written null.
func JSONRPCAnswer(id json.RawMessage, d Decision) []byte {
	n := d.Status()
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: nullID(id), Result: &n}) // cannot fail
	return b
}

// JSONRPCError is a JSON-RPC 2.0 error answer to request id (which the
// center reads as unknown).
func JSONRPCError(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: nullID(id), Error: &rpcError{code, msg}}) // cannot fail
	return b
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 || !json.Valid(id) {
		return json.RawMessage("null")
	}
	return id
}

// DecodeAnswer reads the body of a 2xx answer to q on an endpoint of
// protocol p, strictly (see the package documentation for the shapes):
//
//   - http: a JSON object echoing q.MessageKey, TrustMessage's
//     {"status":"SUCCESS","data":{"messageKey":..,"messageStatus":n}} or
//     {"messageKey":..,"decision":"commit"|"rollback"|"unknown"};
//   - triple: Content-Type application/json and the bare integer n;
//   - jsonrpc: {"jsonrpc":"2.0","id":q.ID,"result":n}.
//
// n is 2 commit, 3 rollback, 1 unknown. A clean unknown returns
// DecisionUnknown and no error. Anything else returns DecisionUnknown and
// an error wrapping ErrUnreadable, except a JSON-RPC error answer, which
// returns an error naming its code and message.
func DecodeAnswer(p Protocol, q Question, contentType string, body []byte) (Decision, error) {
	b := bytes.TrimSpace(body)
	switch p {
	case ProtoHTTP:
		return decodeHTTP(b, q.MessageKey)
	case ProtoTriple:
		if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
			return DecisionUnknown, fmt.Errorf("%w: Content-Type %q (want application/json): %s", ErrUnreadable, contentType, snippet(b))
		}
		if !isStatus(b) {
			return DecisionUnknown, fmt.Errorf("%w: want the integer 1, 2 or 3: %s", ErrUnreadable, snippet(b))
		}
		return statusNumber(b)
	case ProtoJSONRPC:
		return decodeJSONRPC(b, q.ID)
	}
	return DecisionUnknown, fmt.Errorf("%w: protocol %v", ErrUnreadable, p)
}

// decodeHTTP reads the http protocol's answer. The answer HTTPAnswer
// writes (what clientlib's handler sends) is recognised byte for byte,
// without a JSON parse or an allocation; any other spelling (extra fields,
// spaces, the decision shape, escapes in the key) is parsed once into a
// map of raw values, whose parts are then read strictly.
func decodeHTTP(b []byte, key string) (Decision, error) {
	if d, ok := canonicalHTTP(b, key); ok {
		return d, nil
	}
	if len(b) == 0 || b[0] != '{' {
		return DecisionUnknown, fmt.Errorf("%w: want a JSON object echoing the messageKey: %s", ErrUnreadable, snippet(b))
	}
	// json.Unmarshal checks the whole input is valid JSON before it
	// decodes (a separate json.Valid would scan it twice).
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return DecisionUnknown, fmt.Errorf("%w: want a JSON object echoing the messageKey: %s", ErrUnreadable, snippet(b))
	}
	dec, hasDec := m["decision"]
	st, hasSt := m["status"]
	switch {
	case hasDec && hasSt:
		return DecisionUnknown, fmt.Errorf("%w: both decision and status: %s", ErrUnreadable, snippet(b))
	case hasSt:
		return trustMessage(st, m, key)
	case hasDec:
		if err := sameKey(m["messageKey"], key); err != nil {
			return DecisionUnknown, err
		}
		return decisionWord(dec)
	}
	return DecisionUnknown, fmt.Errorf("%w: neither status nor decision: %s", ErrUnreadable, snippet(b))
}

// The exact bytes HTTPAnswer writes, around the key and the status digit.
const (
	canonicalPrefix = `{"status":"SUCCESS","data":{"messageKey":"`
	canonicalMiddle = `","messageStatus":`
	canonicalSuffix = `}}`
)

// canonicalHTTP recognises HTTPAnswer(key, d) exactly, for a key that JSON
// writes without escapes (printable ASCII other than '"', '\\', '<', '>'
// and '&', which encoding/json escapes). ok is false for anything else,
// which the strict parse then reads.
func canonicalHTTP(b []byte, key string) (Decision, bool) {
	n := len(canonicalPrefix) + len(key) + len(canonicalMiddle) + 1 + len(canonicalSuffix)
	if len(b) != n || string(b[:len(canonicalPrefix)]) != canonicalPrefix {
		return DecisionUnknown, false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return DecisionUnknown, false
		}
	}
	rest := b[len(canonicalPrefix):]
	if string(rest[:len(key)]) != key {
		return DecisionUnknown, false
	}
	rest = rest[len(key):]
	if string(rest[:len(canonicalMiddle)]) != canonicalMiddle {
		return DecisionUnknown, false
	}
	rest = rest[len(canonicalMiddle):]
	if !isStatus(rest[:1]) || string(rest[1:]) != canonicalSuffix {
		return DecisionUnknown, false
	}
	d, _ := statusNumber(rest[:1]) // checked by isStatus: cannot fail
	return d, true
}

// trustMessage reads {"status":"SUCCESS","data":{"messageKey":..,"messageStatus":n}}.
func trustMessage(st json.RawMessage, m map[string]json.RawMessage, key string) (Decision, error) {
	var status string
	if err := json.Unmarshal(st, &status); err != nil || status != "SUCCESS" {
		msg := ""
		if raw, ok := m["message"]; ok {
			msg = ": " + rawSnippet(raw)
		}
		return DecisionUnknown, fmt.Errorf("%w: status %s%s", ErrUnreadable, rawSnippet(st), msg)
	}
	var data map[string]json.RawMessage
	raw, ok := m["data"]
	if !ok || json.Unmarshal(raw, &data) != nil || data == nil {
		return DecisionUnknown, fmt.Errorf("%w: SUCCESS without a data object", ErrUnreadable)
	}
	if err := sameKey(data["messageKey"], key); err != nil {
		return DecisionUnknown, err
	}
	ms := bytes.TrimSpace(data["messageStatus"])
	if !isStatus(ms) {
		return DecisionUnknown, fmt.Errorf("%w: data.messageStatus %s (want 1, 2 or 3)", ErrUnreadable, snippet(ms))
	}
	return statusNumber(ms)
}

// sameKey checks that an answer's messageKey is present and is key.
func sameKey(raw json.RawMessage, key string) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: the answer does not echo the messageKey", ErrUnreadable)
	}
	var got string
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("%w: messageKey %s is not a string", ErrUnreadable, rawSnippet(raw))
	}
	if got != key {
		return fmt.Errorf("%w: answer is for messageKey %q, asked for %q", ErrUnreadable, got, key)
	}
	return nil
}

// isStatus tells whether b is exactly the JSON integer 1, 2 or 3.
func isStatus(b []byte) bool {
	return len(b) == 1 && b[0] >= '1' && b[0] <= '3'
}

// statusNumber reads messageStatus 1, 2 or 3 (checked by isStatus).
func statusNumber(b []byte) (Decision, error) {
	switch b[0] {
	case '2':
		return DecisionCommit, nil
	case '3':
		return DecisionRollback, nil
	}
	return DecisionUnknown, nil
}

func decisionWord(raw json.RawMessage) (Decision, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return DecisionUnknown, fmt.Errorf("%w: decision %s is not a string", ErrUnreadable, rawSnippet(raw))
	}
	switch s {
	case "commit":
		return DecisionCommit, nil
	case "rollback":
		return DecisionRollback, nil
	case "unknown":
		return DecisionUnknown, nil
	}
	return DecisionUnknown, fmt.Errorf("%w: decision %q (want commit, rollback or unknown)", ErrUnreadable, s)
}

// decodeJSONRPC reads a JSON-RPC 2.0 response to request id.
func decodeJSONRPC(b []byte, id int64) (Decision, error) {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return DecisionUnknown, fmt.Errorf("%w: not a JSON-RPC response: %s", ErrUnreadable, snippet(b))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return DecisionUnknown, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if r.JSONRPC != "2.0" {
		return DecisionUnknown, fmt.Errorf("%w: jsonrpc %q (want 2.0)", ErrUnreadable, r.JSONRPC)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		var e rpcError
		if json.Unmarshal(r.Error, &e) == nil {
			return DecisionUnknown, fmt.Errorf("JSON-RPC error %d: %s", e.Code, snippet([]byte(e.Message)))
		}
		return DecisionUnknown, fmt.Errorf("JSON-RPC error: %s", snippet(r.Error))
	}
	if !sameID(r.ID, id) {
		return DecisionUnknown, fmt.Errorf("%w: JSON-RPC id %s (sent %d)", ErrUnreadable, snippet(r.ID), id)
	}
	res := bytes.TrimSpace(r.Result)
	if len(res) == 0 || string(res) == "null" {
		return DecisionUnknown, fmt.Errorf("%w: JSON-RPC response without result", ErrUnreadable)
	}
	if !isStatus(res) {
		return DecisionUnknown, fmt.Errorf("%w: JSON-RPC result %s (want 1, 2 or 3)", ErrUnreadable, snippet(res))
	}
	return statusNumber(res)
}

func sameID(raw json.RawMessage, id int64) bool {
	want := strconv.FormatInt(id, 10)
	s := string(bytes.TrimSpace(raw))
	return s == want || s == strconv.Quote(want)
}

// snippet renders at most 120 bytes of b, quoted, for an error message.
func snippet(b []byte) string {
	const max = 120
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// Snippet renders at most 120 bytes of an answer body, quoted, for error
// messages and logs.
func Snippet(b []byte) string { return snippet(b) }

// rawSnippet renders at most 120 bytes of a valid JSON value as is.
func rawSnippet(b json.RawMessage) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
