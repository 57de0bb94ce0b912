package verifier

import (
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

	"github.com/go-resty/resty/v2"
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
	q := checkback.Question{BizID: cl.bizID, MessageKey: cl.key, Attempt: cl.attempt, Timeout: cl.timeout}
	if cl.ep.Protocol == checkback.ProtoJSONRPC {
		q.ID = c.ids.Add(1)
	}
	r := cl.ep.Request(q)
	req := c.client.R().SetContext(ctx).SetDoNotParseResponse(false)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	// The W3C trace context (the check-back span's, or the producer's).
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if r.Body != nil {
		req.SetBody(r.Body)
	}
	if len(cl.secret) > 0 {
		sign := checkback.Sign
		if cl.signV1 {
			sign = checkback.SignWithV1
		}
		req.SetHeader(checkback.SignatureHeader, sign(cl.secret, c.now(), r.Signed()))
	}
	resp, err := req.Execute(r.Method, r.URL.String())
	if err != nil {
		return answer{Err: callError(ctx, cl, err)}
	}
	b := resp.Body()
	if sc := resp.StatusCode(); sc < 200 || sc > 299 {
		return answer{Err: &statusError{code: sc, body: checkback.Snippet(b)}}
	}
	d, err := checkback.DecodeAnswer(cl.ep.Protocol, q, resp.Header().Get("Content-Type"), b)
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

// restyLogger sends resty's own messages to slog at debug level.
type restyLogger struct{ l *slog.Logger }

func (r restyLogger) Errorf(format string, v ...any) {
	r.l.Debug("resty: " + fmt.Sprintf(format, v...))
}
func (r restyLogger) Warnf(format string, v ...any) { r.l.Debug("resty: " + fmt.Sprintf(format, v...)) }
func (r restyLogger) Debugf(format string, v ...any) {
	r.l.Debug("resty: " + fmt.Sprintf(format, v...))
}
