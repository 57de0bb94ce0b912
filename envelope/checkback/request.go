package checkback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Question is one check-back: which message is asked about.
type Question struct {
	BizID      string
	MessageKey string
	// Attempt is sent on HTTP as &attempt=n (informational).
	Attempt int
	// ID is the JSON-RPC request id; the answer must echo it.
	ID int64
	// Timeout, when set, is sent to Triple providers in their deadline
	// headers (tri-service-timeout, Triple-Timeout-Ms).
	Timeout time.Duration
}

// Request is an HTTP request ready to send.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
	// Body is nil for the HTTP shape (GET).
	Body []byte
}

// Target is the request target the signature covers: escaped path, then
// "?" and the raw query when there is one.
func (r Request) Target() string { return r.URL.RequestURI() }

// Request encodes q for e:
//
//   - http: GET {url}?{endpoint query}&bizID=..&messageKey=..&attempt=n,
//     Accept: application/json;
//   - triple: POST /{interface}/{method}, Content-Type: application/json,
//     body [bizID, messageKey], tri-service-version/-group when the
//     endpoint names them;
//   - jsonrpc: POST {path}, Content-Type: application/json, body
//     {"jsonrpc":"2.0","method":..,"params":[bizID, messageKey],"id":q.ID}.
//
// The bizID argument of Triple and JSON-RPC is a number or a string as the
// endpoint's BizIDEncoding says (BizParam).
func (e Endpoint) Request(q Question) Request {
	r := Request{Method: http.MethodPost, URL: e.URL(), Header: http.Header{}}
	switch e.Protocol {
	case ProtoHTTP:
		r.Method = http.MethodGet
		v := url.Values{}
		for k, vs := range e.Query {
			v[k] = append([]string(nil), vs...)
		}
		v.Set("bizID", q.BizID)
		v.Set("messageKey", q.MessageKey)
		v.Set("attempt", strconv.Itoa(q.Attempt))
		r.URL.RawQuery = v.Encode()
		r.Header.Set("Accept", "application/json")
	case ProtoTriple:
		r.Body, _ = json.Marshal([]any{BizParam(q.BizID, e.BizID), q.MessageKey}) // plain values: cannot fail
		r.Header.Set("Content-Type", "application/json")
		if q.Timeout > 0 {
			ms := strconv.FormatInt(q.Timeout.Milliseconds(), 10)
			r.Header.Set("tri-service-timeout", ms)
			r.Header.Set("Triple-Timeout-Ms", ms)
		}
		if e.Version != "" {
			r.Header.Set("tri-service-version", e.Version)
		}
		if e.Group != "" {
			r.Header.Set("tri-service-group", e.Group)
		}
	case ProtoJSONRPC:
		r.Body, _ = json.Marshal(jsonrpcRequest{ // plain values: cannot fail
			JSONRPC: "2.0",
			Method:  e.Method,
			Params:  []any{BizParam(q.BizID, e.BizID), q.MessageKey},
			ID:      q.ID,
		})
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

type jsonrpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
	ID      int64  `json:"id"`
}

// BizParam is the bizID argument of a Triple or JSON-RPC call: a JSON
// number or a string, as enc says.
func BizParam(bizID string, enc BizIDEncoding) any {
	if enc == BizIDString {
		return bizID
	}
	if enc == BizIDAuto && !numericBizID(bizID) {
		return bizID
	}
	n, err := strconv.ParseInt(bizID, 10, 64)
	if err != nil {
		return bizID
	}
	return n
}

// numericBizID reports whether s is all digits without a leading zero
// ("0" itself is numeric): the bizIDs sent as numbers by default. Whether
// it fits an int64 is left to strconv.
func numericBizID(s string) bool {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseArgs reads the positional arguments [bizID, messageKey] of a Triple
// body or JSON-RPC params; bizID may be a number or a string, and is
// returned as written.
func ParseArgs(args []json.RawMessage) (bizID, key string, err error) {
	if len(args) != 2 {
		return "", "", fmt.Errorf("want 2 arguments [bizID, messageKey], got %d", len(args))
	}
	d := json.NewDecoder(bytes.NewReader(args[0]))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", "", errors.New("bizID is not a JSON value")
	}
	switch t := v.(type) {
	case json.Number:
		bizID = t.String()
	case string:
		bizID = t
	default:
		return "", "", errors.New("bizID must be a number or a string")
	}
	if err := json.Unmarshal(args[1], &key); err != nil {
		return "", "", errors.New("messageKey must be a string")
	}
	if bizID == "" || key == "" {
		return "", "", errors.New("bizID and messageKey must not be empty")
	}
	return bizID, key, nil
}
