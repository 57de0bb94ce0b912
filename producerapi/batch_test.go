package producerapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestBatch(t *testing.T) {
	f := newFixture(t)
	body := `{"envelopes":[
		{"type":"prepare","biz_id":"orders","key":"o-1","payload":"hello","headers":{"ec-topic":"orders.events","ec-h-b":"2","ec-h-a":"1"}},
		{"type":"prepare","biz_id":"orders","key":"o-2","payload_base64":"AAEC","headers":{"ec-topic":"orders.events"}},
		{"type":"commit","biz_id":"orders","key":"o-1"},
		{"type":"rollback","biz_id":"orders","key":"o-2"}]}`
	res, out := f.do("POST", "/v1/batch", ordersToken, strings.NewReader(body))
	require.Equal(t, http.StatusAccepted, res.StatusCode, out)
	var got struct{ Results []accepted }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Results, 4)
	for i, want := range []string{"prepare", "prepare", "commit", "rollback"} {
		require.Equal(t, want, got.Results[i].Type)
		require.Equal(t, int64(i), got.Results[i].Offset, "written in order")
	}
	recs := f.prod.produced()
	require.Equal(t, "hello", string(recs[0].Value))
	require.Equal(t, []byte{0, 1, 2}, recs[1].Value)
	require.Equal(t, []kgo.RecordHeader{{Key: "ec-h-a", Value: []byte("1")}, {Key: "ec-h-b", Value: []byte("2")}}, recs[0].Headers[len(recs[0].Headers)-2:],
		"forwarded headers in name order")
	require.Equal(t, "commit", headers(recs[2])["ec-type"])
}

// Nothing is sent when one envelope is invalid or not allowed; the error
// names the envelope.
func TestBatchErrors(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxBatch, c.MaxBatchBytes, c.MaxPayload = 3, 400, 50 })
	ok := `{"type":"commit","biz_id":"orders","key":"a"}`
	for _, tc := range []struct {
		name, body  string
		code        int
		field, text string
	}{
		{"not json", `{"envelopes":`, 400, "body", "not a batch"},
		{"unknown field", `{"envelopes":[],"x":1}`, 400, "body", "unknown field"},
		{"empty", `{"envelopes":[]}`, 400, "envelopes", "at least one envelope"},
		{"too many", `{"envelopes":[` + strings.Repeat(ok+",", 3) + ok + `]}`, 413, "envelopes", "4 envelopes, at most 3"},
		{"body too large", `{"envelopes":[` + ok + `]}` + strings.Repeat(" ", 400), 413, "body", "exceeds ingress.max_batch_bytes (400)"},
		{"invalid second", `{"envelopes":[` + ok + `,{"type":"prepare","biz_id":"orders","key":"b"}]}`, 400, "envelopes[1].ec-topic", "required on prepare"},
		{"bad type", `{"envelopes":[{"type":"maybe","biz_id":"orders","key":"b"}]}`, 400, "envelopes[0].type", "want prepare, commit, rollback or cancel"},
		{"both payloads", `{"envelopes":[{"type":"prepare","biz_id":"orders","key":"b","payload":"x","payload_base64":"eA=="}]}`, 400, "envelopes[0].payload", "not both"},
		{"bad base64", `{"envelopes":[{"type":"prepare","biz_id":"orders","key":"b","payload_base64":"!"}]}`, 400, "envelopes[0].payload_base64", "not standard base64"},
		{"payload on commit", `{"envelopes":[{"type":"commit","biz_id":"orders","key":"b","payload":"x"}]}`, 400, "envelopes[0].value", "commit carries no payload"},
		{"payload too large", `{"envelopes":[{"type":"prepare","biz_id":"orders","key":"b","payload":"` + strings.Repeat("x", 51) + `","headers":{"ec-topic":"t"}}]}`, 413, "envelopes[0].value", "payload of 51 bytes exceeds the limit of 50"},
		{"unknown header", `{"envelopes":[{"type":"prepare","biz_id":"orders","key":"b","headers":{"topic":"t"}}]}`, 400, "envelopes[0].headers.topic", "unknown parameter"},
		{"other bizID", `{"envelopes":[` + ok + `,{"type":"commit","biz_id":"payments","key":"b"}]}`, 403, "envelopes[1].biz_id", `may not act for bizID "payments"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out := f.do("POST", "/v1/batch", ordersToken, strings.NewReader(tc.body))
			require.Equal(t, tc.code, res.StatusCode, out)
			field, msg := errorOf(t, out)
			require.Equal(t, tc.field, field)
			require.Contains(t, msg, tc.text)
		})
	}
	require.Empty(t, f.prod.produced())
}

// When the broker fails some envelopes the answer is 503 (or 413 when the
// only failures are records too large) and says which were acknowledged.
func TestBatchPartialFailure(t *testing.T) {
	f := newFixture(t)
	body := `{"envelopes":[{"type":"commit","biz_id":"orders","key":"a"},{"type":"commit","biz_id":"orders","key":"b"}]}`
	f.prod.fail = func(i int, _ *kgo.Record) error {
		if i == 1 {
			return kerr.NotLeaderForPartition
		}
		return nil
	}
	res, out := f.do("POST", "/v1/batch", ordersToken, strings.NewReader(body))
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, out)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	var got struct {
		Error   string
		Results []accepted
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Contains(t, got.Error, "retry")
	require.Empty(t, got.Results[0].Error)
	require.Equal(t, int64(0), got.Results[0].Offset)
	require.Contains(t, got.Results[1].Error, "NOT_LEADER")
	require.Equal(t, int32(-1), got.Results[1].Partition)

	f.prod.fail = func(int, *kgo.Record) error { return kerr.MessageTooLarge }
	res, out = f.do("POST", "/v1/batch", ordersToken, strings.NewReader(body))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, out)
	require.Empty(t, res.Header.Get("Retry-After"))
}
