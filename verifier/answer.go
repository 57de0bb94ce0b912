package verifier

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Decision is what a check-back answer says.
type Decision uint8

const (
	// DecisionUnknown: not decided yet, or the answer could not be read.
	DecisionUnknown Decision = iota
	// DecisionCommit: the producer's local transaction committed.
	DecisionCommit
	// DecisionRollback: it rolled back.
	DecisionRollback
)

func (d Decision) String() string {
	switch d {
	case DecisionCommit:
		return "commit"
	case DecisionRollback:
		return "rollback"
	default:
		return "unknown"
	}
}

// errUnreadable marks an answer that was received but could not be read as
// commit, rollback or unknown; it is unknown and counts as an error.
var errUnreadable = errors.New("unreadable check-back answer")

// parseDecision reads an answer body (HTTP and Triple, and a JSON-RPC
// result). It is fail-closed: only an exact commit (2, "commit", or
// TrustMessage's SUCCESS with messageStatus 2) is commit, likewise for
// rollback; a clean unknown (1, "unknown") returns DecisionUnknown and no
// error; anything else returns DecisionUnknown and an error.
func parseDecision(body []byte, key string) (Decision, error) {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return DecisionUnknown, fmt.Errorf("%w: empty body", errUnreadable)
	}
	if !json.Valid(b) {
		return DecisionUnknown, fmt.Errorf("%w: not JSON: %s", errUnreadable, snippet(b))
	}
	switch c := b[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return statusNumber(b)
	case c == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return DecisionUnknown, fmt.Errorf("%w: %v", errUnreadable, err)
		}
		dec, hasDec := m["decision"]
		st, hasSt := m["status"]
		switch {
		case hasDec && hasSt:
			return DecisionUnknown, fmt.Errorf("%w: both decision and status: %s", errUnreadable, snippet(b))
		case hasDec:
			return decisionWord(dec)
		case hasSt:
			return trustMessage(st, m, key)
		}
	}
	return DecisionUnknown, fmt.Errorf("%w: %s", errUnreadable, snippet(b))
}

// statusNumber reads TrustMessage's messageStatus: 2 commit, 3 rollback,
// 1 unknown (prepared); any other value is unreadable.
func statusNumber(b []byte) (Decision, error) {
	switch string(bytes.TrimSpace(b)) {
	case "2":
		return DecisionCommit, nil
	case "3":
		return DecisionRollback, nil
	case "1":
		return DecisionUnknown, nil
	}
	return DecisionUnknown, fmt.Errorf("%w: status %s (want 1, 2 or 3)", errUnreadable, snippet(b))
}

func decisionWord(raw json.RawMessage) (Decision, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return DecisionUnknown, fmt.Errorf("%w: decision %s is not a string", errUnreadable, snippet(raw))
	}
	switch strings.ToLower(s) {
	case "commit":
		return DecisionCommit, nil
	case "rollback":
		return DecisionRollback, nil
	case "unknown":
		return DecisionUnknown, nil
	}
	return DecisionUnknown, fmt.Errorf("%w: decision %q (want commit, rollback or unknown)", errUnreadable, s)
}

// trustMessage reads {"status":"SUCCESS","data":{"messageKey":..,"messageStatus":n}}.
func trustMessage(st json.RawMessage, m map[string]json.RawMessage, key string) (Decision, error) {
	var status string
	if err := json.Unmarshal(st, &status); err != nil || status != "SUCCESS" {
		msg := ""
		if raw, ok := m["message"]; ok {
			msg = ": " + rawSnippet(raw)
		}
		return DecisionUnknown, fmt.Errorf("%w: status %s%s", errUnreadable, rawSnippet(st), msg)
	}
	var data struct {
		MessageKey    *string         `json:"messageKey"`
		MessageStatus json.RawMessage `json:"messageStatus"`
	}
	raw, ok := m["data"]
	if !ok || json.Unmarshal(raw, &data) != nil || len(data.MessageStatus) == 0 {
		return DecisionUnknown, fmt.Errorf("%w: SUCCESS without data.messageStatus", errUnreadable)
	}
	if data.MessageKey != nil && *data.MessageKey != key {
		return DecisionUnknown, fmt.Errorf("%w: answer is for messageKey %q, asked for %q", errUnreadable, *data.MessageKey, key)
	}
	return statusNumber(data.MessageStatus)
}

// parseJSONRPC reads a JSON-RPC 2.0 response to request id.
func parseJSONRPC(body []byte, id int64, key string) (Decision, error) {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	b := bytes.TrimSpace(body)
	if !json.Valid(b) || len(b) == 0 || b[0] != '{' {
		return DecisionUnknown, fmt.Errorf("%w: not a JSON-RPC response: %s", errUnreadable, snippet(b))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return DecisionUnknown, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	if r.JSONRPC != "2.0" {
		return DecisionUnknown, fmt.Errorf("%w: jsonrpc %q (want 2.0)", errUnreadable, r.JSONRPC)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(r.Error, &e) == nil {
			return DecisionUnknown, fmt.Errorf("JSON-RPC error %d: %s", e.Code, snippet([]byte(e.Message)))
		}
		return DecisionUnknown, fmt.Errorf("JSON-RPC error: %s", snippet(r.Error))
	}
	if !sameID(r.ID, id) {
		return DecisionUnknown, fmt.Errorf("%w: JSON-RPC id %s (sent %d)", errUnreadable, snippet(r.ID), id)
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return DecisionUnknown, fmt.Errorf("%w: JSON-RPC response without result", errUnreadable)
	}
	return parseDecision(r.Result, key)
}

func sameID(raw json.RawMessage, id int64) bool {
	want := strconv.FormatInt(id, 10)
	s := string(bytes.TrimSpace(raw))
	return s == want || s == strconv.Quote(want)
}

// snippet renders at most 120 bytes of b for an error message.
func snippet(b []byte) string {
	const max = 120
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// rawSnippet renders at most 120 bytes of a valid JSON value as is.
func rawSnippet(b json.RawMessage) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
