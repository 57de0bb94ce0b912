package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// TestOrphanCommitFilledByDLQReplay: a producer's PREPARE lacks its forward
// topic and is dead-lettered; its COMMIT leaves an orphan (COMMITTED without
// body). The operator replays the dead letter through the admin API with
// the topic: the orphan gets its body and is forwarded.
func TestOrphanCommitFilledByDLQReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()

	prep := &kgo.Record{Topic: controlTopic, Key: []byte("orders:orphan-1"), Value: []byte("orphan payload"), Headers: []kgo.RecordHeader{
		{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-biz", Value: []byte("orders")}, {Key: "ec-key", Value: []byte("orphan-1")},
		{Key: "ec-fkey", Value: []byte("fk-orphan")}, // no ec-topic
	}}
	require.NoError(t, raw.ProduceSync(t.Context(), prep).FirstErr())
	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "orphan-1"})
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "orphan-1")
		return err == nil && m.Orphan()
	}, 30*time.Second, 20*time.Millisecond, "the COMMIT leaves an orphan")

	api := "http://" + c.Addr() + adminapi.Prefix
	var rec adminapi.DLQRecord
	require.Eventually(t, func() bool {
		resp, err := http.Get(api + "/dlq")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var l adminapi.DLQList
		if json.NewDecoder(resp.Body).Decode(&l) != nil {
			return false
		}
		for _, r := range l.Records {
			if r.Key == "orders:orphan-1" {
				rec = r
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the PREPARE is dead-lettered")
	require.Contains(t, rec.Reason, "ec-topic")

	replay := func(req adminapi.DLQReplayRequest) (int, string) {
		b, err := json.Marshal(req)
		require.NoError(t, err)
		resp, err := http.Post("http://"+c.Addr()+adminapi.DLQReplayPath(rec.Partition, rec.Offset), "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		var body bytes.Buffer
		_, err = body.ReadFrom(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body.String()
	}
	code, body := replay(adminapi.DLQReplayRequest{Reason: "as it is"})
	require.Equal(t, http.StatusConflict, code, body)
	require.Contains(t, body, "would be dead-lettered again")
	code, body = replay(adminapi.DLQReplayRequest{Reason: "producer forgot the topic; it is " + businessTopic, Topic: businessTopic})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"audited": true`)

	id := msgID("orders", "orphan-1")
	col.waitFor(t, []string{id}, time.Minute)
	got := col.get(id)
	require.Equal(t, "orphan payload", got[0].Value)
	require.Equal(t, "fk-orphan", got[0].Key)
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "orphan-1")
		return err == nil && m.SendStatus == state.SendSent
	}, 30*time.Second, 20*time.Millisecond)
	audit, err := c.Store.Audit(t.Context(), "orders", "orphan-1")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "dlq_replay", audit[0].Action)
}
