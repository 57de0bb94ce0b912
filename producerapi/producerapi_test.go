package producerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/state"
)

func headers(r *kgo.Record) map[string]string {
	out := map[string]string{}
	for _, h := range r.Headers {
		out[h.Key] = string(h.Value)
	}
	return out
}

// A PREPARE, COMMIT and ROLLBACK each become the control record a Kafka
// producer would write (envelope.Encode of the same envelope), answered
// 202 with where the broker put it.
func TestWritesTheControlRecord(t *testing.T) {
	f := newFixture(t)
	res, body := f.do("POST", "/v1/messages/orders/o-1/prepare?ec-h-Trace-Id=abc", ordersToken, text("hello"),
		"ec-topic", "orders.events", "Ec-Fkey", "o-1", "ec-verify", "http://127.0.0.1:8090/cb", "ec-check-after", "5000", "ec-h-source", "web")
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	var a accepted
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	require.Equal(t, accepted{ID: "orders:o-1", Type: "prepare", Topic: "ec.control", Partition: 0, Offset: 0}, a)

	want, err := envelope.Encode(envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "o-1", Payload: []byte("hello"),
		ForwardTopic: "orders.events", ForwardKey: "o-1", Verify: "http://127.0.0.1:8090/cb", CheckAfter: 5 * time.Second,
		// HTTP headers first (names lower-cased), then query parameters (case kept).
		Headers: []envelope.Header{{Key: "source", Value: []byte("web")}, {Key: "Trace-Id", Value: []byte("abc")}}})
	require.NoError(t, err)
	got := f.prod.produced()
	require.Len(t, got, 1)
	require.Equal(t, kafkarec.Record("ec.control", want), got[0])

	for i, typ := range []string{"commit", "rollback"} {
		res, body = f.do("POST", "/v1/messages/orders/o-1/"+typ, ordersToken, nil)
		require.Equal(t, http.StatusAccepted, res.StatusCode, body)
		require.NoError(t, json.Unmarshal([]byte(body), &a))
		require.Equal(t, typ, a.Type)
		require.Equal(t, int64(i+1), a.Offset)
		rec := f.prod.produced()[i+1]
		require.Equal(t, "orders:o-1", string(rec.Key))
		require.Equal(t, map[string]string{"ec-type": typ, "ec-biz": "orders", "ec-key": "o-1"}, headers(rec))
		require.Empty(t, rec.Value)
	}
}

// Keys with '/' or ':' travel percent-encoded in the path.
func TestEscapedKey(t *testing.T) {
	f := newFixture(t)
	res, body := f.do("POST", "/v1/messages/orders/a%2Fb:c/prepare?ec-topic=t", ordersToken, text("x"))
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	require.Equal(t, "orders:a/b:c", string(f.prod.produced()[0].Key))
}

// Invalid envelopes are refused 400 naming the field, with the reason
// ingest's decoder gives for the same control record (same rules, same
// words), and nothing is produced.
func TestValidationMatchesTheDecoder(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, target string
		hdrs         []string
		field        string
	}{
		{"no topic", "/v1/messages/orders/k/prepare", nil, "ec-topic"},
		{"bad topic", "/v1/messages/orders/k/prepare?ec-topic=a%20b", nil, "ec-topic"},
		{"check-after not a number", "/v1/messages/orders/k/prepare?ec-topic=t&ec-check-after=soon", nil, "ec-check-after"},
		{"check-after too long", "/v1/messages/orders/k/prepare?ec-topic=t", []string{"ec-check-after", "999999999999"}, "ec-check-after"},
		{"verify scheme", "/v1/messages/orders/k/prepare?ec-topic=t&ec-verify=ftp://h/x", nil, "ec-verify"},
		{"reserved forwarded header", "/v1/messages/orders/k/prepare?ec-topic=t&ec-h-ec-id=x", nil, "ec-h-ec-id"},
		{"key too long", "/v1/messages/orders/" + strings.Repeat("k", 256) + "/prepare?ec-topic=t", nil, "ec-key"},
		{"repeated", "/v1/messages/orders/k/prepare?ec-topic=t", []string{"ec-topic", "u"}, "ec-topic"},
		{"control character", "/v1/messages/orders/k/prepare?ec-topic=t&ec-fkey=a%01b", nil, "ec-fkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", tc.target, text("p"))
			for i := 0; i+1 < len(tc.hdrs); i += 2 {
				req.Header.Add(tc.hdrs[i], tc.hdrs[i+1])
			}
			params, perr := requestParams(req)
			require.Nil(t, perr)
			key := strings.Split(req.URL.Path, "/")[4]
			res, body := f.do("POST", tc.target, allToken, text("p"), tc.hdrs...)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			field, msg := errorOf(t, body)
			require.Equal(t, tc.field, field)
			// The decoder's reason for the same record.
			hs := append([]envelope.Header{{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-biz", Value: []byte("orders")},
				{Key: "ec-key", Value: []byte(key)}}, params...)
			_, err := envelope.Decoder{}.Decode(envelope.Record{Key: []byte("orders:" + key), Value: []byte("p"), Headers: hs})
			var de *envelope.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, de.Field+": "+de.Reason, msg)
		})
	}
	require.Empty(t, f.prod.produced())
}

// Parameters that are not the API's are refused naming them; commit and
// rollback carry no routing and no body.
func TestParameterErrors(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, target, body string
		hdrs               []string
		field, msg         string
	}{
		{"unknown query parameter", "/v1/messages/orders/k/prepare?topic=t", "p", nil, "topic", "unknown query parameter"},
		{"unknown ec- header", "/v1/messages/orders/k/prepare?ec-topic=t", "p", []string{"ec-topik", "x"}, "ec-topik", "unknown parameter"},
		{"type from the path", "/v1/messages/orders/k/prepare?ec-topic=t&ec-type=commit", "p", nil, "ec-type", "is given by the path"},
		{"biz from the path", "/v1/messages/orders/k/prepare?ec-topic=t", "p", []string{"ec-biz", "x"}, "ec-biz", "is given by the path"},
		{"bad escape", "/v1/messages/orders/k/prepare?ec-topic=%zz", "p", nil, "query", "is not a valid query parameter"},
		{"commit with routing", "/v1/messages/orders/k/commit?ec-topic=t", "", nil, "ec-topic", "commit carries no payload or routing (only prepare does)"},
		{"rollback with a body", "/v1/messages/orders/k/rollback", "x", nil, "value", "rollback carries no payload or routing (only prepare does)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := f.do("POST", tc.target, ordersToken, text(tc.body), tc.hdrs...)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			field, msg := errorOf(t, body)
			require.Equal(t, tc.field, field)
			require.Contains(t, msg, tc.msg)
		})
	}
	require.Empty(t, f.prod.produced())
}

// A chunked body with no length is read only up to the limit.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// Payloads over ingest.max_payload_bytes, and PREPAREs whose forwarded
// record ingest would dead-letter as too large, are refused 413; a topic
// the target cannot send to is refused 400 as ingest would dead-letter it.
func TestSizeLimitsAndTopicCheck(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.MaxPayload = 100
		c.CheckTopic = func(target, topic string) error {
			if target == "rmq" && strings.Contains(topic, ".") {
				return errors.New("rocketmq topics have no '.'")
			}
			return nil
		}
	})
	res, body := f.do("POST", "/v1/messages/orders/k/prepare?ec-topic=t", ordersToken, text(strings.Repeat("x", 101)))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, body)
	field, msg := errorOf(t, body)
	require.Equal(t, "value", field)
	require.Equal(t, "value: payload of 101 bytes exceeds the limit of 100", msg)

	req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/messages/orders/k/prepare?ec-topic=t", io.LimitReader(endless{}, 1<<20))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+ordersToken)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Contains(t, w.Body.String(), "payload of more than 100 bytes exceeds the limit of 100")

	// 5 forwarded headers of 16 KiB: within the envelope's limits, but the
	// forwarded record exceeds 100 + 64 KiB.
	hdrs := []string{}
	for i := range 5 {
		hdrs = append(hdrs, fmt.Sprintf("ec-h-h%d", i), strings.Repeat("v", 16<<10))
	}
	res, body = f.do("POST", "/v1/messages/orders/k/prepare?ec-topic=t", ordersToken, text("x"), hdrs...)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, body)
	require.Contains(t, body, "forwarded record of")

	res, body = f.do("POST", "/v1/messages/orders/k/prepare?ec-topic=a.b&ec-target=rmq", ordersToken, text("x"))
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	field, msg = errorOf(t, body)
	require.Equal(t, "ec-topic", field)
	require.Equal(t, `ec-topic: not a topic target "rmq" can send to: rocketmq topics have no '.'`, msg)
	require.Empty(t, f.prod.produced())
}

// A forward topic the target cannot send to is refused by the target's
// rule, in the target's words, whichever character is wrong: one rule,
// one text (not the envelope's wider rule first, then the target's).
func TestTopicRefusedByOneRule(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.CheckTopic = func(_, topic string) error { return kafka.CheckTopic(topic) }
	})
	var msgs []string
	for _, topic := range []string{"orders%20events!", "orders%7Cevents", "orders%25events"} {
		res, body := f.do("POST", "/v1/messages/orders/k/prepare?ec-topic="+topic, ordersToken, text("x"))
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		field, msg := errorOf(t, body)
		require.Equal(t, "ec-topic", field)
		msg = strings.NewReplacer(`"orders events!"`, `"T"`, `"orders|events"`, `"T"`, `"orders%events"`, `"T"`).Replace(msg)
		require.NotContains(t, msg, "%", "the Kafka target's rule does not allow %%")
		msgs = append(msgs, msg)
	}
	require.Equal(t, `ec-topic: not a topic the default target can send to: kafka topic "T" is invalid: only letters, digits, '.', '_' and '-' are allowed`, msgs[0])
	require.Equal(t, msgs[0], msgs[1])
	require.Equal(t, msgs[0], msgs[2])
	require.Empty(t, f.prod.produced())
}

// Tokens: none or unknown is 401 with a Bearer challenge; a token for
// other bizIDs is 403; "*" acts for every bizID; rotated tokens (the
// TokenSource) apply at once.
func TestAuth(t *testing.T) {
	current := []Token{{Name: "orders", Token: ordersToken, BizIDs: []string{"orders"}}}
	f := newFixture(t, func(c *Config) {
		c.Tokens = nil
		c.TokenSource = func() []Token { return current }
	})
	for _, tc := range []struct {
		method, target, token string
		want                  int
	}{
		{"POST", "/v1/messages/orders/k/commit", "", http.StatusUnauthorized},
		{"POST", "/v1/messages/orders/k/commit", "wrong-token-0123456789", http.StatusUnauthorized},
		{"POST", "/v1/messages/orders/k/prepare", "", http.StatusUnauthorized},
		{"POST", "/v1/messages/orders/k/rollback", "", http.StatusUnauthorized},
		{"POST", "/v1/messages/orders/k/cancel", "", http.StatusUnauthorized},
		{"GET", "/v1/messages/orders/k", "", http.StatusUnauthorized},
		{"POST", "/v1/batch", "", http.StatusUnauthorized},
		{"POST", "/v1/messages/payments/k/commit", ordersToken, http.StatusForbidden},
		{"POST", "/v1/messages/payments/k/prepare?ec-topic=t", ordersToken, http.StatusForbidden},
		{"POST", "/v1/messages/payments/k/rollback", ordersToken, http.StatusForbidden},
		{"POST", "/v1/messages/payments/k/cancel", ordersToken, http.StatusForbidden},
		{"GET", "/v1/messages/payments/k", ordersToken, http.StatusForbidden},
		{"POST", "/v1/messages/orders/k/commit", ordersToken, http.StatusAccepted},
	} {
		res, body := f.do(tc.method, tc.target, tc.token, nil)
		require.Equal(t, tc.want, res.StatusCode, "%s %s: %s", tc.method, tc.target, body)
		if tc.want == http.StatusUnauthorized {
			require.Equal(t, `Bearer realm="eventcenter producer API"`, res.Header.Get("WWW-Authenticate"))
		}
		if tc.want == http.StatusForbidden {
			field, msg := errorOf(t, body)
			require.Equal(t, "bizID", field)
			require.Equal(t, `bizID: token "orders" may not act for bizID "payments"`, msg)
		}
	}
	// Lower-case scheme and surrounding spaces are fine.
	res, body := f.do("POST", "/v1/messages/orders/k/commit", "", nil, "Authorization", "bearer  "+ordersToken+" ")
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)

	current = []Token{{Name: "orders", Token: "rotated-token-0123456789", BizIDs: []string{"orders"}}}
	res, _ = f.do("POST", "/v1/messages/orders/k/commit", ordersToken, nil)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the old token no longer works")
	res, _ = f.do("POST", "/v1/messages/orders/k/commit", "rotated-token-0123456789", nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode)

	current = []Token{{Name: "all", Token: allToken, BizIDs: []string{"*"}}}
	res, _ = f.do("POST", "/v1/messages/anything/k/commit", allToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode)
}

// Insecure mode (dev) takes requests without a token, for every bizID;
// configured tokens switch it off.
func TestInsecure(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Tokens, c.Insecure = nil, true })
	res, body := f.do("POST", "/v1/messages/any/k/commit", "", nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	f = newFixture(t, func(c *Config) { c.Insecure = true })
	res, _ = f.do("POST", "/v1/messages/any/k/commit", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

// Each token has its own bucket: over it, 429 with Retry-After (whole
// seconds, rounded up); a request larger than the burst is 429 at once;
// the bucket refills.
func TestRateLimit(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) {
		c.Rate, c.Burst = 0.5, 2 // one envelope per 2s
		c.Now = func() time.Time { return now }
		c.Tokens[1].Rate, c.Tokens[1].Burst = 100, 100
	})
	for range 2 {
		res, body := f.do("POST", "/v1/messages/orders/k/commit", ordersToken, nil)
		require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	}
	for _, target := range []string{"/v1/messages/orders/k/commit", "/v1/messages/orders/k/prepare?ec-topic=t", "/v1/messages/orders/k/rollback", "/v1/messages/orders/k/cancel"} {
		res, body := f.do("POST", target, ordersToken, nil)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
		require.Equal(t, "2", res.Header.Get("Retry-After"))
		require.Contains(t, body, `token \"orders\" is over its rate limit`)
	}
	res, _ := f.do("GET", "/v1/messages/orders/k", ordersToken, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	// The other token has its own bucket.
	res, _ = f.do("POST", "/v1/messages/orders/k/commit", allToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode)

	now = now.Add(2 * time.Second)
	res, body := f.do("POST", "/v1/messages/orders/k/commit", ordersToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)

	now = now.Add(time.Minute)
	batch := `{"envelopes":[{"type":"commit","biz_id":"orders","key":"a"},{"type":"commit","biz_id":"orders","key":"b"},{"type":"commit","biz_id":"orders","key":"c"}]}`
	res, body = f.do("POST", "/v1/batch", ordersToken, text(batch))
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
	require.Contains(t, body, "3 envelopes in one request exceed token")
	require.Empty(t, res.Header.Get("Retry-After"), "waiting cannot help")
}

// The broker's failures: no acknowledgement in time (or a retriable
// error) is 503 with Retry-After, naming the Kafka error but not the
// broker's own text; a record refused as too large is 413.
func TestProduceFailures(t *testing.T) {
	var failWith error
	f := newFixture(t, func(c *Config) { c.ProduceTimeout = 50 * time.Millisecond })
	f.prod.fail = func(int, *kgo.Record) error { return failWith }
	for _, tc := range []struct {
		err    error
		code   int
		msg    string
		target string
	}{
		{fmt.Errorf("dial tcp 10.1.2.3:9092: %w", context.DeadlineExceeded), 503, "the broker did not acknowledge within 50ms", "/v1/messages/orders/k/prepare?ec-topic=t"},
		{kerr.NotEnoughReplicas, 503, "the broker answered", "/v1/messages/orders/k/commit"},
		{errors.New("dial tcp 10.1.2.3:9092: connection refused"), 503, "could not be reached", "/v1/messages/orders/k/rollback"},
		{context.Canceled, 503, "canceled", "/v1/messages/orders/k/commit"},
		{kerr.MessageTooLarge, 413, "refused the control record as too large", "/v1/messages/orders/k/prepare?ec-topic=t"},
		{kerr.MessageTooLarge, 413, "too large", "/v1/messages/orders/k/commit"},
		{kerr.RecordListTooLarge, 413, "too large", "/v1/messages/orders/k/rollback"},
		{kerr.NotEnoughReplicas, 503, "the broker answered", "/v1/messages/orders/k/cancel"},
		{kerr.MessageTooLarge, 413, "too large", "/v1/messages/orders/k/cancel"},
	} {
		failWith = tc.err
		res, body := f.do("POST", tc.target, ordersToken, nil)
		require.Equal(t, tc.code, res.StatusCode, body)
		require.Contains(t, body, tc.msg)
		require.NotContains(t, body, "10.1.2.3")
		if tc.code == 503 {
			require.Equal(t, "1", res.Header.Get("Retry-After"))
			require.Contains(t, body, "retry (a repeated envelope is harmless)")
		}
	}
}

// GET answers the message's state for the token's bizIDs.
func TestGetState(t *testing.T) {
	f := newFixture(t)
	created := testNow.Add(-time.Minute)
	f.st.msgs["orders:o-1"] = state.Message{BizID: "orders", Key: "o-1", Status: state.Committed, SendStatus: state.SendSent, HasBody: true,
		SendRef: "orders.events/0@7", SendAttempts: 1, CreatedAt: created, UpdatedAt: testNow, DecidedAt: testNow, SentAt: testNow,
		Payload: []byte("secret"), LastError: "internal"}
	f.st.msgs["orders:o-2"] = state.Message{BizID: "orders", Key: "o-2", Status: state.Prepared, VerifyAttempts: 2, CreatedAt: created, UpdatedAt: created}
	res, body := f.do("GET", "/v1/messages/orders/o-1", ordersToken, nil)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.JSONEq(t, `{"biz_id":"orders","key":"o-1","status":"COMMITTED","send_status":"SENT","send_ref":"orders.events/0@7",
		"verify_attempts":0,"send_attempts":1,"created_at":"2026-11-26T11:59:00Z","updated_at":"2026-11-26T12:00:00Z",
		"decided_at":"2026-11-26T12:00:00Z","sent_at":"2026-11-26T12:00:00Z"}`, body)
	res, body = f.do("GET", "/v1/messages/orders/o-2", ordersToken, nil)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.JSONEq(t, `{"biz_id":"orders","key":"o-2","status":"PREPARED","verify_attempts":2,"send_attempts":0,
		"created_at":"2026-11-26T11:59:00Z","updated_at":"2026-11-26T11:59:00Z"}`, body)

	// A COMMIT for a key never prepared is stored COMMITTED PENDING
	// without a body: the answer must not read like a healthy message.
	f.st.msgs["orders:o-3"] = state.Message{BizID: "orders", Key: "o-3", Status: state.Committed, SendStatus: state.SendPending,
		CreatedAt: created, UpdatedAt: created, DecidedAt: created}
	res, body = f.do("GET", "/v1/messages/orders/o-3", ordersToken, nil)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.JSONEq(t, `{"biz_id":"orders","key":"o-3","status":"COMMITTED","send_status":"PENDING","verify_attempts":0,"send_attempts":0,
		"created_at":"2026-11-26T11:59:00Z","updated_at":"2026-11-26T11:59:00Z","decided_at":"2026-11-26T11:59:00Z",
		"orphan":true,"note":"orphan COMMIT: no PREPARE was received for this key, so nothing will be forwarded until one arrives; an operator closes it with: eventcenter admin close-orphan orders:o-3 --reason ..."}`, body)

	res, body = f.do("GET", "/v1/messages/orders/nope", ordersToken, nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode, body)
	require.Contains(t, body, "no message orders:nope")

	f.st.err = errors.New("connection to 10.1.2.3 refused")
	res, body = f.do("GET", "/v1/messages/orders/o-1", ordersToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
	require.NotContains(t, body, "10.1.2.3")
	require.Equal(t, "1", res.Header.Get("Retry-After"))
}

// Anything else is 404 (or 405 for another method on a route's path),
// counted as route "unmatched"; metrics count every route by status.
func TestUnmatchedAndMetrics(t *testing.T) {
	f := newFixture(t)
	res, _ := f.do("GET", "/v1/nothing", ordersToken, nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = f.do("DELETE", "/v1/messages/orders/k", ordersToken, nil)
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	res, _ = f.do("POST", "/v1/messages/orders/k/commit", ordersToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	res, _ = f.do("POST", "/v1/messages/orders/k/commit", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	require.InDelta(t, 1, testutil.ToFloat64(f.h.met.requests.WithLabelValues("unmatched", "404")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(f.h.met.requests.WithLabelValues("unmatched", "405")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(f.h.met.requests.WithLabelValues("commit", "202")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(f.h.met.requests.WithLabelValues("commit", "401")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(f.h.met.envelopes.WithLabelValues("commit")), 0)
	require.Equal(t, uint64(2), histogramCount(t, f, "commit"))
}

func histogramCount(t *testing.T, f *fixture, route string) uint64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "eventcenter_ingress_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	t.Fatalf("no duration histogram for route %s", route)
	return 0
}
