package kafkarec_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	hs := []envelope.Header{{Key: envelope.HeaderType, Value: []byte("prepare")}, {Key: "ec-h-trace", Value: []byte("t")}, {Key: "e"}}
	k := kafkarec.KgoHeaders(hs)
	require.Equal(t, []kgo.RecordHeader{{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-h-trace", Value: []byte("t")}, {Key: "e"}}, k)
	require.Equal(t, hs, kafkarec.Headers(k))
	// None: nil both ways, as the records the clients build.
	require.Nil(t, kafkarec.KgoHeaders(nil))
	require.Nil(t, kafkarec.Headers([]kgo.RecordHeader{}))
}

func TestRecordAndSize(t *testing.T) {
	t.Parallel()
	r, err := envelope.Encode(envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "o-1"})
	require.NoError(t, err)
	kr := kafkarec.Record("eventcenter.control", r)
	require.Equal(t, "eventcenter.control", kr.Topic)
	require.Equal(t, r.Key, kr.Key)
	require.Equal(t, r.Value, kr.Value)
	require.Equal(t, r.Headers, kafkarec.Headers(kr.Headers))
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	require.Equal(t, n, kafkarec.Size(kr))
}
