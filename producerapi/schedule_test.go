package producerapi

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/ingest"
)

// A PREPARE takes ec-deliver-at or ec-delay (as a header or a query
// parameter), not both; POST .../cancel writes a cancel envelope, also in
// a batch; a cancel takes no schedule.
func TestScheduleParamsAndCancel(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return testNow } })
	res, body := f.do("POST", "/v1/messages/orders/at/prepare?ec-deliver-at=2027-01-02T09:00:00Z", ordersToken, text("x"), "ec-topic", "t")
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	res, body = f.do("POST", "/v1/messages/orders/delay/prepare", ordersToken, text("x"), "ec-topic", "t", "ec-delay", "60000")
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	res, body = f.do("POST", "/v1/messages/orders/at/cancel", ordersToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	res, body = f.do("POST", "/v1/batch", ordersToken, text(`{"envelopes":[{"type":"cancel","biz_id":"orders","key":"delay"}]}`))
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)

	got := f.prod.produced()
	require.Len(t, got, 4)
	dec := func(i int) envelope.Envelope {
		t.Helper()
		r := got[i]
		hs := make([]envelope.Header, len(r.Headers))
		for j, h := range r.Headers {
			hs[j] = envelope.Header{Key: h.Key, Value: h.Value}
		}
		e, err := envelope.Decoder{}.Decode(envelope.Record{Key: r.Key, Value: r.Value, Headers: hs})
		require.NoError(t, err)
		return e
	}
	require.True(t, dec(0).DeliverAt.Equal(time.Date(2027, 1, 2, 9, 0, 0, 0, time.UTC)))
	require.Equal(t, time.Minute, dec(1).Delay)
	require.Equal(t, envelope.Envelope{Type: envelope.Cancel, BizID: "orders", MessageKey: "at"}, dec(2))
	require.Equal(t, envelope.Envelope{Type: envelope.Cancel, BizID: "orders", MessageKey: "delay"}, dec(3))

	res, body = f.do("POST", "/v1/messages/orders/both/prepare", ordersToken, text("x"), "ec-topic", "t", "ec-delay", "5", "ec-deliver-at", "1893553445678")
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	field, _ := errorOf(t, body)
	require.Equal(t, envelope.HeaderDelay, field)
	res, body = f.do("POST", "/v1/messages/orders/bad/prepare", ordersToken, text("x"), "ec-topic", "t", "ec-deliver-at", "tomorrow")
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	res, body = f.do("POST", "/v1/messages/orders/past/prepare?ec-deliver-at=2020-01-02T09:00:00Z", ordersToken, text("x"), "ec-topic", "t")
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	field, msg := errorOf(t, body)
	require.Equal(t, envelope.HeaderDeliverAt, field)
	require.Contains(t, msg, "not in the future")
	res, body = f.do("POST", "/v1/messages/orders/at/cancel?ec-delay=5", ordersToken, nil)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	require.Len(t, f.prod.produced(), 4, "nothing more produced")
}

// While scheduling is off (an older center is live), a scheduled PREPARE
// is refused 503 with the reason and Retry-After, nothing is produced; an
// unscheduled one and a cancel go through.
func TestScheduleRefusedWhileSchedulingIsOff(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Scheduling = func() (bool, string) { return false, "scheduled delivery is off for this test" }
	})
	for path, hdrs := range map[string][]string{
		"/v1/messages/orders/at/prepare?ec-deliver-at=2030-01-02T09:00:00Z": {"ec-topic", "t"},
		"/v1/messages/orders/delay/prepare":                                 {"ec-topic", "t", "ec-delay", "60000"},
	} {
		res, body := f.do("POST", path, ordersToken, text("x"), hdrs...)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
		require.Equal(t, "30", res.Header.Get("Retry-After"))
		field, msg := errorOf(t, body)
		require.Contains(t, []string{envelope.HeaderDeliverAt, envelope.HeaderDelay}, field)
		require.Contains(t, msg, "off for this test")
	}
	require.Empty(t, f.prod.produced())
	res, body := f.do("POST", "/v1/messages/orders/plain/prepare", ordersToken, text("x"), "ec-topic", "t")
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	res, body = f.do("POST", "/v1/messages/orders/at/cancel", ordersToken, nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	require.Len(t, f.prod.produced(), 2)
}

// A schedule ingest would dead-letter (further ahead than forward.max_delay,
// leaving the COMMIT an orphan) is refused 400 naming the limit, singly
// and in a batch; nothing is produced. One just within it is accepted.
func TestScheduleBeyondMaxDelayRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return testNow } })
	for _, c := range []struct{ header, value string }{
		{envelope.HeaderDeliverAt, "2100-01-01T00:00:00Z"},
		{envelope.HeaderDeliverAt, "9999-12-31T23:59:59Z"},
		{envelope.HeaderDeliverAt, "9223372036854775807"}, // int64 max, Unix ms
		{envelope.HeaderDelay, strconv.FormatInt((200 * 24 * time.Hour).Milliseconds(), 10)},
	} {
		res, body := f.do("POST", "/v1/messages/orders/far/prepare", ordersToken, text("x"), "ec-topic", "t", c.header, c.value)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %s: %s", c.header, c.value, body)
		field, msg := errorOf(t, body)
		require.Equal(t, c.header, field, body)
		require.Contains(t, msg, "forward.max_delay (2160h0m0s)", body)

		batch := fmt.Sprintf(`{"envelopes":[{"type":"prepare","biz_id":"orders","key":"far","payload":"x","headers":{"ec-topic":"t",%q:%q}}]}`, c.header, c.value)
		res, body = f.do("POST", "/v1/batch", ordersToken, text(batch))
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %s: %s", c.header, c.value, body)
		field, _ = errorOf(t, body)
		require.Equal(t, "envelopes[0]."+c.header, field, body)
	}
	require.Empty(t, f.prod.produced())
	within := testNow.Add(ingest.DefaultMaxDelay - time.Hour).Format(time.RFC3339)
	res, body := f.do("POST", "/v1/messages/orders/near/prepare", ordersToken, text("x"), "ec-topic", "t", envelope.HeaderDeliverAt, within)
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
}
