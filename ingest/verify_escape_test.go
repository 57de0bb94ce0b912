package ingest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
)

// A PREPARE whose check-back endpoint hides a slash or a dot segment behind
// %-escapes is malformed: it goes to the DLQ with the reason and is never
// stored, so the verifier never calls it.
func TestPrepareWithEncodedPathEscapeGoesToDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	in := e.start(e.config(), st, nil, NewOwnership())

	bad := []string{
		"http://127.0.0.1:8090/cb/..%2fadmin",
		"http://127.0.0.1:8090/cb/%2e%2e%2fadmin",
		"http://127.0.0.1:8090/cb%2f..%2fadmin",
	}
	var recs []*kgo.Record
	for i, ep := range bad {
		recs = append(recs, prepareRec("shop", "k"+string(rune('0'+i)), []byte("x"),
			kgo.RecordHeader{Key: envelope.HeaderVerify, Value: []byte(ep)}))
	}
	good := prepareRec("shop", "ok", []byte("x"), kgo.RecordHeader{Key: envelope.HeaderVerify, Value: []byte("http://127.0.0.1:8090/cb/check")})
	e.produce(append(recs, good)...)

	require.Eventually(t, func() bool { _, ok := st.get("shop", "ok"); return ok }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	dead := e.readDLQ(len(bad))
	require.Len(t, dead, len(bad))
	for i, d := range dead {
		require.Equal(t, recs[i].Key, d.Key)
		reason := headerMap(d)[envelope.HeaderDLQReason]
		require.Contains(t, reason, "ec-verify", bad[i])
		require.Contains(t, reason, "encoded slash", bad[i])
		_, stored := st.get("shop", "k"+string(rune('0'+i)))
		require.False(t, stored, bad[i])
	}
	require.InDelta(t, 3, testutil.ToFloat64(in.met.dlq.WithLabelValues("ec-verify")), 0)
}
