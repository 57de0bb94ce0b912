package producerapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

// A PREPARE takes ec-deliver-at or ec-delay (as a header or a query
// parameter), not both; POST .../cancel writes a cancel envelope, also in
// a batch; a cancel takes no schedule.
func TestScheduleParamsAndCancel(t *testing.T) {
	f := newFixture(t)
	res, body := f.do("POST", "/v1/messages/orders/at/prepare?ec-deliver-at=2030-01-02T09:00:00Z", ordersToken, text("x"), "ec-topic", "t")
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
	require.True(t, dec(0).DeliverAt.Equal(time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)))
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
