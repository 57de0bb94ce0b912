package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	s, err := load(getenv)
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:9092"}, s.brokers)
	require.Equal(t, "eventcenter.control", s.controlTopic)
	require.Equal(t, "orders", s.bizID)
	require.EqualValues(t, 7, s.failEvery)

	env["PRODUCER_BROKERS"] = "a:1,b:2"
	env["PRODUCER_RATE"] = "2.5"
	s, err = load(getenv)
	require.NoError(t, err)
	require.Equal(t, []string{"a:1", "b:2"}, s.brokers)
	require.InDelta(t, 2.5, s.rate, 0)

	for k, v := range map[string]string{"PRODUCER_RATE": "-1", "PRODUCER_FAIL_EVERY": "x", "PRODUCER_LOSE_EVERY": "-3"} {
		bad := map[string]string{k: v}
		_, err := load(func(name string) string { return bad[name] })
		require.ErrorContains(t, err, k)
	}
}

// envelopes consumes the control topic until it holds want records.
func envelopes(t *testing.T, brokers []string, want int) map[string][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("eventcenter.control"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	byKey := map[string][]string{}
	for n := 0; n < want; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "control records: got %d of %d", n, want)
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "ec-type" {
					byKey[string(r.Key)] = append(byKey[string(r.Key)], string(h.Value))
				}
			}
			n++
		})
	}
	return byKey
}

func TestOrdersAndCheckbacks(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control"))
	require.NoError(t, err)
	defer c.Close()

	s := settings{
		brokers: c.ListenAddrs(), controlTopic: "eventcenter.control", listen: "127.0.0.1:0",
		checkback: "http://127.0.0.1:1/checkback", bizID: "orders", topic: "orders.events",
		rocketmqTopic: "orders-rmq", failEvery: 2, loseEvery: 3, rmqEvery: 4,
	}
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, slog.New(slog.DiscardHandler), s, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		require.FailNow(t, "run ended early", "%v", err)
	}
	base := "http://" + addr

	order := func() (id, state string) {
		resp, err := http.Post(base+"/orders", "application/json", nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out["id"], out["state"]
	}
	id1, st1 := order() // committed
	id2, st2 := order() // local transaction fails: rolled back
	id3, st3 := order() // committed locally, COMMIT "lost"
	id4, st4 := order() // rolled back (fails), RocketMQ target
	require.Equal(t, []string{"committed", "failed", "committed", "failed"}, []string{st1, st2, st3, st4})

	got := envelopes(t, s.brokers, 7)
	require.Equal(t, []string{"prepare", "commit"}, got["orders:"+id1])
	require.Equal(t, []string{"prepare", "rollback"}, got["orders:"+id2])
	require.Equal(t, []string{"prepare"}, got["orders:"+id3], "the center must check back")
	require.Equal(t, []string{"prepare", "rollback"}, got["orders:"+id4])

	checkback := func(biz, key string) (int, string) {
		q := url.Values{"bizID": {biz}, "messageKey": {key}}
		resp, err := http.Get(base + "/checkback?" + q.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for key, status := range map[string]string{id1: "2", id2: "3", id3: "2", "never-seen": "3"} {
		code, body := checkback("orders", key)
		require.Equal(t, http.StatusOK, code, key)
		require.Contains(t, body, `"messageStatus":`+status, key)
	}
	code, _ := checkback("payments", id1)
	require.Equal(t, http.StatusInternalServerError, code, "another bizID is not ours: an error, read as unknown")

	resp, err := http.Get(base + "/orders")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	cancel()
	require.NoError(t, <-done)
}

func TestRunFailsOnBadListenAddress(t *testing.T) {
	t.Parallel()
	s := settings{brokers: []string{"127.0.0.1:1"}, controlTopic: "c", listen: "not-an-address", bizID: "orders"}
	require.ErrorContains(t, run(t.Context(), slog.New(slog.DiscardHandler), s, nil), "listen")
}
