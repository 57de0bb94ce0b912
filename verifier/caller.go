package verifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// maxAnswerBytes bounds a check-back answer; a longer one is an error.
const maxAnswerBytes = 64 << 10

// call is one check-back request.
type call struct {
	ep      checkback.Endpoint
	bizID   string
	key     string
	attempt int
	timeout time.Duration
	secret  []byte
	// signV1 adds the legacy v1 signature (BizConfig.SignV1).
	signV1 bool
}

// answer is the outcome of one call: a decision, or DecisionUnknown with
// Err set when the call failed or the answer could not be read.
type answer struct {
	Decision checkback.Decision
	Err      error
}

// caller speaks the three protocols over one shared HTTP client.
type caller struct {
	client *http.Client
	now    func() time.Time
	ids    atomic.Int64
}

// errRedirect refuses redirects: a check-back goes where the allow list
// says, not where the answer points.
var errRedirect = errors.New("auto redirect is disabled")

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

// newCaller builds the caller on rt. It uses net/http directly: a
// general-purpose client library's per-request middleware (URL and
// header parsing, content-type regular expressions) cost about as much
// CPU as the rest of a check-back's work in the center.
func newCaller(rt http.RoundTripper, now func() time.Time, _ *slog.Logger) *caller {
	hc := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
	return &caller{client: hc, now: now}
}

// do runs one call and reads its answer.
func (c *caller) do(ctx context.Context, cl call) answer {
	ctx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	q := checkback.Question{BizID: cl.bizID, MessageKey: cl.key, Attempt: cl.attempt, Timeout: cl.timeout}
	if cl.ep.Protocol == checkback.ProtoJSONRPC {
		q.ID = c.ids.Add(1)
	}
	r := cl.ep.Request(q)
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	// The request is built on r.URL as it is (rendering it to a string
	// for NewRequest to parse back cost a parse per call).
	req, err := http.NewRequestWithContext(ctx, r.Method, "/", body)
	if err != nil {
		return answer{Err: fmt.Errorf("build the request: %w", err)}
	}
	req.URL, req.Host = r.URL, r.URL.Host
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", "eventcenter-verifier")
	// The W3C trace context (the check-back span's, or the producer's).
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if len(cl.secret) > 0 {
		sign := checkback.Sign
		if cl.signV1 {
			sign = checkback.SignWithV1
		}
		req.Header.Set(checkback.SignatureHeader, sign(cl.secret, c.now(), r.Signed()))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return answer{Err: callError(ctx, cl, err)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	_ = resp.Body.Close()
	if err != nil {
		return answer{Err: callError(ctx, cl, err)}
	}
	if len(b) > maxAnswerBytes {
		return answer{Err: callError(ctx, cl, errTooLarge)}
	}
	if sc := resp.StatusCode; sc < 200 || sc > 299 {
		return answer{Err: &statusError{code: sc, body: checkback.Snippet(b)}}
	}
	d, err := checkback.DecodeAnswer(cl.ep.Protocol, q, resp.Header.Get("Content-Type"), b)
	return answer{Decision: d, Err: err}
}

// errTooLarge is an answer over maxAnswerBytes.
var errTooLarge = errors.New("answer too large")

func callError(ctx context.Context, cl call, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w within %s", errNoAnswer, cl.timeout)
	}
	if errors.Is(err, errTooLarge) {
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
