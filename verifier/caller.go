package verifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-resty/resty/v2"
)

// maxAnswerBytes bounds a check-back answer; a longer one is an error.
const maxAnswerBytes = 64 << 10

// call is one check-back request.
type call struct {
	ep      Endpoint
	bizID   string
	key     string
	attempt int
	timeout time.Duration
	secret  []byte
}

// answer is the outcome of one call: a decision, or DecisionUnknown with
// Err set when the call failed or the answer could not be read.
type answer struct {
	Decision Decision
	Err      error
}

// caller speaks the three protocols over one shared resty client.
type caller struct {
	client *resty.Client
	now    func() time.Time
	ids    atomic.Int64
}

// newTransport is the shared transport: bounded idle and per-host
// connections, short dial and TLS handshake timeouts, no proxy from the
// environment (check-backs go where the allow list says).
func newTransport(perHost int) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   perHost,
		MaxConnsPerHost:       perHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 0, // the per-call context deadline bounds it
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     false,
	}
}

func newCaller(rt http.RoundTripper, now func() time.Time, log *slog.Logger) *caller {
	hc := &http.Client{Transport: rt}
	c := resty.NewWithClient(hc).
		SetRedirectPolicy(resty.NoRedirectPolicy()).
		SetResponseBodyLimit(maxAnswerBytes).
		SetLogger(restyLogger{log}).
		SetHeader("User-Agent", "eventcenter-verifier")
	return &caller{client: c, now: now}
}

// do runs one call and reads its answer.
func (c *caller) do(ctx context.Context, cl call) answer {
	ctx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	u := cl.ep.requestURL()
	req := c.client.R().SetContext(ctx).SetDoNotParseResponse(false)
	var (
		method = http.MethodPost
		body   []byte
		id     int64
	)
	switch cl.ep.Protocol {
	case ProtoHTTP:
		method = http.MethodGet
		q := url.Values{}
		for k, v := range cl.ep.Query {
			q[k] = append([]string(nil), v...)
		}
		q.Set("bizID", cl.bizID)
		q.Set("messageKey", cl.key)
		q.Set("attempt", strconv.Itoa(cl.attempt))
		u.RawQuery = q.Encode()
		req.SetHeader("Accept", "application/json")
	case ProtoTriple:
		body, _ = json.Marshal([]any{bizParam(cl.bizID, cl.ep.BizID), cl.key}) // plain values: cannot fail
		ms := strconv.FormatInt(cl.timeout.Milliseconds(), 10)
		req.SetHeader("Content-Type", "application/json").
			SetHeader("tri-service-timeout", ms).
			SetHeader("Triple-Timeout-Ms", ms)
		if cl.ep.Version != "" {
			req.SetHeader("tri-service-version", cl.ep.Version)
		}
		if cl.ep.Group != "" {
			req.SetHeader("tri-service-group", cl.ep.Group)
		}
	case ProtoJSONRPC:
		id = c.ids.Add(1)
		body, _ = json.Marshal(map[string]any{ // plain values: cannot fail
			"jsonrpc": "2.0",
			"method":  cl.ep.Method,
			"params":  []any{bizParam(cl.bizID, cl.ep.BizID), cl.key},
			"id":      id,
		})
		req.SetHeader("Content-Type", "application/json")
	default:
		return answer{Err: fmt.Errorf("protocol %v not callable", cl.ep.Protocol)}
	}
	if body != nil {
		req.SetBody(body)
	}
	if len(cl.secret) > 0 {
		req.SetHeader(SignatureHeader, Sign(cl.secret, c.now(), method, u.RequestURI(), body))
	}
	resp, err := req.Execute(method, u.String())
	if err != nil {
		return answer{Err: callError(ctx, cl, err)}
	}
	b := resp.Body()
	if sc := resp.StatusCode(); sc < 200 || sc > 299 {
		return answer{Err: &statusError{code: sc, body: snippet(b)}}
	}
	var d Decision
	if cl.ep.Protocol == ProtoJSONRPC {
		d, err = parseJSONRPC(b, id, cl.key)
	} else {
		d, err = parseDecision(b, cl.key)
	}
	return answer{Decision: d, Err: err}
}

func callError(ctx context.Context, cl call, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w within %s", errNoAnswer, cl.timeout)
	}
	if errors.Is(err, resty.ErrResponseBodyTooLarge) {
		return fmt.Errorf("answer larger than %d bytes", maxAnswerBytes)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("connection closed before a full answer: %w", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("call failed: %w", err)
}

// bizParam is the bizID argument of a Triple or JSON-RPC call: a JSON
// number or a string, as the endpoint's BizIDEncoding says.
func bizParam(bizID string, enc BizIDEncoding) any {
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

// restyLogger sends resty's own messages to slog at debug level.
type restyLogger struct{ l *slog.Logger }

func (r restyLogger) Errorf(format string, v ...any) {
	r.l.Debug("resty: " + fmt.Sprintf(format, v...))
}
func (r restyLogger) Warnf(format string, v ...any) { r.l.Debug("resty: " + fmt.Sprintf(format, v...)) }
func (r restyLogger) Debugf(format string, v ...any) {
	r.l.Debug("resty: " + fmt.Sprintf(format, v...))
}
