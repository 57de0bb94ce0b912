package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// TestLaneDLQReplay: a PREPARE without its forward topic, sent to a lane,
// is dead-lettered to the lane's dead-letter topic and its COMMIT leaves an
// orphan. The admin API lists it under ?lane= (not on the default lane)
// and replays it, with the topic, into the lane's control topic: the
// orphan, a row of the lane, gets its body and is forwarded.
func TestLaneDLQReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Kafka.CreateTopics, c.Kafka.ControlPartitions = true, partitions
		c.Kafka.Lanes = []config.Lane{{Name: "vip", ID: 1}}
	})
	laneTopic := controlTopic + ".lane.vip"
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()

	prep := &kgo.Record{Topic: laneTopic, Key: []byte("vip:orphan-1"), Value: []byte("lane payload"), Headers: []kgo.RecordHeader{
		{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-biz", Value: []byte("vip")}, {Key: "ec-key", Value: []byte("orphan-1")},
		{Key: "ec-fkey", Value: []byte("fk-orphan")}, // no ec-topic
	}}
	require.NoError(t, raw.ProduceSync(t.Context(), prep).FirstErr())
	commit, err := envelope.Encode(envelope.Envelope{Type: envelope.Commit, BizID: "vip", MessageKey: "orphan-1"})
	require.NoError(t, err)
	kr := &kgo.Record{Topic: laneTopic, Key: commit.Key, Value: commit.Value}
	for _, h := range commit.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	require.NoError(t, raw.ProduceSync(t.Context(), kr).FirstErr())
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "vip", "orphan-1")
		return err == nil && m.Orphan()
	}, 30*time.Second, 20*time.Millisecond, "the COMMIT leaves an orphan")

	api := "http://" + c.Addr() + adminapi.Prefix
	list := func(lane string) adminapi.DLQList {
		t.Helper()
		resp, err := http.Get(api + "/dlq?lane=" + url.QueryEscape(lane))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var l adminapi.DLQList
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
		return l
	}
	var rec adminapi.DLQRecord
	require.Eventually(t, func() bool {
		for _, r := range list("vip").Records {
			if r.Key == "vip:orphan-1" {
				rec = r
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the PREPARE is dead-lettered on the lane")
	require.Equal(t, "vip", rec.Lane)
	require.Contains(t, rec.Reason, "ec-topic")
	def := list("")
	require.Equal(t, []string{"vip"}, def.Lanes)
	require.Empty(t, def.Records, "the default lane's dead-letter topic holds nothing")

	b, err := json.Marshal(adminapi.DLQReplayRequest{Reason: "producer forgot the topic", Topic: businessTopic})
	require.NoError(t, err)
	resp, err := http.Post("http://"+c.Addr()+adminapi.DLQReplayPath(rec.Partition, rec.Offset)+"?lane=vip", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	var res adminapi.DLQReplayResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, adminapi.DLQReplayResult{Lane: "vip", Partition: rec.Partition, Offset: rec.Offset, Replayed: true, Key: "vip:orphan-1", Audited: true, Known: true}, res)

	id := msgID("vip", "orphan-1")
	col.waitFor(t, []string{id}, time.Minute)
	require.Equal(t, "lane payload", col.get(id)[0].Value)
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "vip", "orphan-1")
		return err == nil && m.SendStatus == state.SendSent
	}, 30*time.Second, 20*time.Millisecond)
	// The replay is in the lane's control topic, after the two records
	// the producer wrote.
	rd, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(laneTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer rd.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	replayed := false
	for !replayed {
		fs := rd.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the replay never reached the lane's control topic")
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				replayed = replayed || (string(r.Key) == "vip:orphan-1" && h.Key == "ec-topic" && string(h.Value) == businessTopic)
			}
		})
	}
	audit, err := c.Store.Audit(t.Context(), "vip", "orphan-1")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Contains(t, audit[0].Reason, fmt.Sprintf("dead letter %d/%d of lane vip replayed", rec.Partition, rec.Offset))
}
