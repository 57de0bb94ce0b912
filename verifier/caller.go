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
	rc  *resty.Client
	now func() time.Time
	ids atomic.Int64
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

// newCaller builds the caller's one resty client on rt, set up for the
// hot path: no retries (the verifier's backoff retries), no redirects, no
// response parsing (the answer is read here, bounded, and decoded
// strictly by checkback.DecodeAnswer), no debug or curl output, and
// resty's warnings logged through log.
func newCaller(rt http.RoundTripper, now func() time.Time, log *slog.Logger) *caller {
	if log == nil {
		log = slog.Default()
	}
	hc := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
	rc := resty.NewWithClient(hc).
		SetRetryCount(0).
		SetDoNotParseResponse(true).
		SetHeader("User-Agent", "eventcenter-verifier").
		SetLogger(restyLogger{log}).
		SetDisableWarn(true)
	return &caller{rc: rc, now: now}
}

// closeIdle closes the transport's idle connections.
func (c *caller) closeIdle() { c.rc.GetClient().CloseIdleConnections() }

// do runs one call and reads its answer.
func (c *caller) do(ctx context.Context, cl call) answer {
	ctx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	q := checkback.Question{BizID: cl.bizID, MessageKey: cl.key, Attempt: cl.attempt, Timeout: cl.timeout}
	if cl.ep.Protocol == checkback.ProtoJSONRPC {
		q.ID = c.ids.Add(1)
	}
	r := cl.ep.Request(q)
	req := c.rc.R().SetContext(ctx)
	req.Header = r.Header // a new map per call, the request's own
	if r.Body != nil {
		// A reader, not the bytes: resty sends a reader as it is, without
		// copying it into a buffer of its own.
		req.SetBody(bytes.NewReader(r.Body))
	}
	// The W3C trace context (the check-back span's, or the producer's).
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if len(cl.secret) > 0 {
		sign := checkback.Sign
		if cl.signV1 {
			sign = checkback.SignWithV1
		}
		req.Header.Set(checkback.SignatureHeader, sign(cl.secret, c.now(), r.Signed()))
	}
	resp, err := req.Execute(r.Method, r.URL.String())
	if err != nil {
		if resp != nil && resp.RawResponse != nil {
			_ = resp.RawResponse.Body.Close()
		}
		return answer{Err: callError(ctx, cl, err)}
	}
	body := resp.RawBody()
	b, err := io.ReadAll(io.LimitReader(body, maxAnswerBytes+1))
	_ = body.Close()
	if err != nil {
		return answer{Err: callError(ctx, cl, err)}
	}
	if len(b) > maxAnswerBytes {
		return answer{Err: callError(ctx, cl, errTooLarge)}
	}
	if sc := resp.StatusCode(); sc < 200 || sc > 299 {
		return answer{Err: &statusError{code: sc, body: checkback.Snippet(b)}}
	}
	d, err := checkback.DecodeAnswer(cl.ep.Protocol, q, resp.Header().Get("Content-Type"), b)
	return answer{Decision: d, Err: err}
}

// restyLogger is resty's logger on slog; resty logs only when something
// is off (a body it could not read, a retry it gave up).
type restyLogger struct{ log *slog.Logger }

func (l restyLogger) Errorf(format string, v ...any) {
	l.log.Error(fmt.Sprintf(format, v...), "part", "resty")
}
func (l restyLogger) Warnf(format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...), "part", "resty")
}
func (l restyLogger) Debugf(format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "part", "resty")
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
