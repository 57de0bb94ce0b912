package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
)

// Via names how the load reaches the center.
const (
	ViaKafka = "kafka" // clientlib producers (Kafka clients)
	ViaHTTP  = "http"  // the producer HTTP API (producerapi)
)

// sender is what the load sends through: a clientlib producer or the
// HTTP API client below.
type sender interface {
	Prepare(ctx context.Context, msg clientlib.Message) error
	Transact(ctx context.Context, msg clientlib.Message, localTx func(context.Context) error) error
	Close()
}

var _ sender = (*clientlib.Producer)(nil)

// ViaReport compares the same load sent through the producer HTTP API and
// through Kafka producers (clientlib), against one center: messages/s
// forwarded and the p99 from PREPARE to forwarded (in both passes the
// clock starts before the PREPARE is sent).
type ViaReport struct {
	// Kafka is the pass through clientlib producers (the report's Center
	// is the same); HTTP the pass through the producer API, run after it.
	Kafka CenterResult `json:"kafka"`
	HTTP  CenterResult `json:"http"`
	// ForwardRateRatio is HTTP's forwarded messages/s over Kafka's;
	// P99Ratio HTTP's p99 prepare-to-forward over Kafka's.
	ForwardRateRatio float64 `json:"forward_rate_ratio"`
	P99Ratio         float64 `json:"p99_prepare_to_forward_ratio"`
	KafkaP99Ms       float64 `json:"kafka_p99_prepare_to_forward_ms"`
	HTTPP99Ms        float64 `json:"http_p99_prepare_to_forward_ms"`
}

func newViaReport(k, h CenterResult) *ViaReport {
	v := &ViaReport{Kafka: k, HTTP: h, KafkaP99Ms: k.CommitToForward.P99Ms, HTTPP99Ms: h.CommitToForward.P99Ms}
	if k.ForwardRate > 0 {
		v.ForwardRateRatio = h.ForwardRate / k.ForwardRate
	}
	if k.CommitToForward.P99Ms > 0 {
		v.P99Ratio = h.CommitToForward.P99Ms / k.CommitToForward.P99Ms
	}
	return v
}

// WriteViaTable prints the comparison (nothing without --via http).
func (r *Report) WriteViaTable(w io.Writer) error {
	if r.Via == nil {
		return nil
	}
	v := r.Via
	_, err := fmt.Fprintf(w, `
via           forwarded/s   p99 prepare→forward   errors
kafka         %11.0f   %17.1f ms   %6d
http          %11.0f   %17.1f ms   %6d
http / kafka  %11.2f   %20.2f
`, v.Kafka.ForwardRate, v.KafkaP99Ms, v.Kafka.Errors, v.HTTP.ForwardRate, v.HTTPP99Ms, v.HTTP.Errors,
		v.ForwardRateRatio, v.P99Ratio)
	return err
}

// httpSender sends envelopes through the producer HTTP API, as a
// producer without a Kafka client would: one request per envelope,
// answered once the broker acknowledged it.
type httpSender struct {
	base          string
	client        *http.Client
	defaultVerify string
}

func newHTTPSender(addr, defaultVerify string, conns int) *httpSender {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &httpSender{base: "http://" + addr, client: &http.Client{Transport: tr, Timeout: time.Minute}, defaultVerify: defaultVerify}
}

func (s *httpSender) Close() { s.client.CloseIdleConnections() }

func (s *httpSender) path(msg clientlib.Message, action string) string {
	return s.base + "/v1/messages/" + url.PathEscape(msg.BizID) + "/" + url.PathEscape(msg.Key) + "/" + action
}

func (s *httpSender) post(ctx context.Context, u string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("producer API: %s: %s", res.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// Prepare sends the PREPARE with its routing as query parameters.
func (s *httpSender) Prepare(ctx context.Context, msg clientlib.Message) error {
	q := url.Values{}
	q.Set(envelope.HeaderTopic, msg.ForwardTopic)
	if msg.ForwardKey != "" {
		q.Set(envelope.HeaderForwardKey, msg.ForwardKey)
	}
	verify := msg.Verify
	if verify == "" {
		verify = s.defaultVerify
	}
	if verify != "" {
		q.Set(envelope.HeaderVerify, verify)
	}
	for _, h := range msg.Headers {
		q.Add(envelope.HeaderForwardPrefix+h.Key, string(h.Value))
	}
	return s.post(ctx, s.path(msg, "prepare")+"?"+q.Encode(), msg.Payload)
}

// Transact is clientlib's: PREPARE, the local transaction, then COMMIT, or
// ROLLBACK and the local transaction's error.
func (s *httpSender) Transact(ctx context.Context, msg clientlib.Message, localTx func(context.Context) error) error {
	if err := s.Prepare(ctx, msg); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := localTx(ctx); err != nil {
		if rerr := s.post(ctx, s.path(msg, "rollback"), nil); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if err := s.post(ctx, s.path(msg, "commit"), nil); err != nil {
		return fmt.Errorf("%w: %w", clientlib.ErrCommitUnsent, err)
	}
	return nil
}
