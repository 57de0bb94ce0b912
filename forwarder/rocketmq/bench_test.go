package rocketmq_test

import (
	"fmt"
	"testing"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/stretchr/testify/require"
)

// BenchmarkSend sends batches of 256 records of 200 bytes (64 forward keys)
// through the target to the fake (both in this process).
func BenchmarkSend(b *testing.B) {
	s, err := rocketmqfake.Start(rocketmqfake.WithTopic("bench", 8))
	require.NoError(b, err)
	defer s.Close()
	tg, err := rocketmq.New(rocketmq.Config{Name: "bench", NameServers: []string{s.NameServerAddr()}})
	require.NoError(b, err)
	defer tg.Close()
	recs := make([]forwarder.Record, 256)
	for i := range recs {
		recs[i] = forwarder.Record{ID: fmt.Sprintf("1:%d", i), Topic: "bench", Key: fmt.Sprintf("k%d", i%64), Tag: "T", Value: make([]byte, 200)}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, r := range tg.Send(b.Context(), recs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSendHotKey is BenchmarkSend with every record of one forward
// key (a hot order key): RocketMQ keeps a key's order by sending its
// records one after the other, so this is the target's ceiling for one
// hot key.
func BenchmarkSendHotKey(b *testing.B) {
	s, err := rocketmqfake.Start(rocketmqfake.WithTopic("bench", 8))
	require.NoError(b, err)
	defer s.Close()
	tg, err := rocketmq.New(rocketmq.Config{Name: "bench", NameServers: []string{s.NameServerAddr()}})
	require.NoError(b, err)
	defer tg.Close()
	recs := make([]forwarder.Record, 256)
	for i := range recs {
		recs[i] = forwarder.Record{ID: fmt.Sprintf("1:%d", i), Topic: "bench", Key: "hot", Tag: "T", Value: make([]byte, 200)}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, r := range tg.Send(b.Context(), recs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
}
