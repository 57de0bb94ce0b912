package forwardertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
)

// record is a record as forwarder.BuildRecord makes it: the id also as the
// ec-id header, after the producer's headers.
func record(topic, id, key string, value []byte, headers ...envelope.Header) forwarder.Record {
	hs := slices.Concat(headers, []envelope.Header{{Key: envelope.HeaderID, Value: []byte(id)}})
	return forwarder.Record{ID: id, Topic: topic, Key: key, Value: value, Headers: hs}
}

// random returns n incompressible bytes (targets compress what they send).
func random(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// A topic the broker does not know fails for good, naming the topic.
func unknownTopic(t *testing.T, s Suite) {
	b := s.New(t, map[string]int{"biz": 1})
	tg := b.Target(t, Options{})
	res := tg.Send(t.Context(), []forwarder.Record{record("missing", "shop:1", "k", []byte("v"))})
	require.Len(t, res, 1)
	require.Error(t, res[0].Err)
	require.Empty(t, res[0].Ref, "a failure carries no reference")
	require.True(t, forwarder.IsPermanent(res[0].Err), "%v", res[0].Err)
	require.ErrorContains(t, res[0].Err, fmt.Sprintf(`%s topic "missing" does not exist`, s.Kind))
	if s.UnknownTopicErr != nil {
		require.ErrorIs(t, res[0].Err, s.UnknownTopicErr)
	}
}

// A Send whose context is already cancelled fails every record with the
// context's error, retryably.
func cancelled(t *testing.T, s Suite) {
	b := s.New(t, map[string]int{"biz": 1})
	tg := b.Target(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	recs := []forwarder.Record{
		record("biz", "shop:1", "a", []byte("1")),
		record("biz", "shop:2", "b", []byte("2")),
		record("biz", "shop:3", "", []byte("3")),
	}
	res := tg.Send(ctx, recs)
	require.Len(t, res, len(recs))
	for i, r := range res {
		require.ErrorIs(t, r.Err, context.Canceled, "record %d", i)
		require.False(t, forwarder.IsPermanent(r.Err), "record %d: %v", i, r.Err)
	}
}

// A Send whose deadline passes while the broker holds its answers returns
// at the deadline, not at the broker's pace, with every record failed
// retryably with the deadline's error.
func deadlineWhileBrokerStalls(t *testing.T, s Suite) {
	b := s.New(t, map[string]int{"slow": 1})
	tg := b.Target(t, Options{})
	b.Stall(t, 3*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := tg.Send(ctx, []forwarder.Record{
		record("slow", "shop:a", "a", []byte("1")),
		record("slow", "shop:b", "b", []byte("2")),
		record("slow", "shop:c", "c", []byte("3")),
	})
	require.Less(t, time.Since(start), 2*time.Second, "the deadline bounds the send")
	require.Len(t, res, 3)
	for i, r := range res {
		require.ErrorIs(t, r.Err, context.DeadlineExceeded, "record %d", i)
		require.False(t, forwarder.IsPermanent(r.Err), "record %d: %v", i, r.Err)
	}
}

// A record over the target's size limit fails for good, naming the limit;
// the records around it, one as large as half the limit, are sent.
func oversize(t *testing.T, s Suite) {
	const limit = 100_000
	b := s.New(t, map[string]int{"biz": 1})
	tg := b.Target(t, Options{MaxMessageBytes: limit})
	half := random(limit/2, 1)
	res := tg.Send(t.Context(), []forwarder.Record{
		record("biz", "shop:a", "k", half),
		record("biz", "shop:b", "other", random(limit+1, 2)),
		record("biz", "shop:c", "k", []byte("small")),
	})
	require.Len(t, res, 3)
	require.NoError(t, res[0].Err)
	require.Error(t, res[1].Err)
	require.True(t, forwarder.IsPermanent(res[1].Err), "%v", res[1].Err)
	require.ErrorContains(t, res[1].Err, fmt.Sprintf("max message bytes (%d", limit))
	if s.OversizeErr != nil {
		require.ErrorIs(t, res[1].Err, s.OversizeErr)
	}
	require.NoError(t, res[2].Err)
	got := b.Received(t, "biz", 2)
	require.Equal(t, []string{"shop:a", "shop:c"}, ids(got))
	require.Equal(t, half, got[0].Value)
}

// Every record arrives once with its key (none when it had none), value
// and headers, under the reference Send returned for it.
func keysAndHeadersKept(t *testing.T, s Suite) {
	const n = 20
	b := s.New(t, map[string]int{"biz": 3})
	tg := b.Target(t, Options{})
	recs := make([]forwarder.Record, n)
	for i := range recs {
		value := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i == 1 {
			value = random(6000, 3) // over RocketMQ's compression threshold
		}
		recs[i] = record("biz", fmt.Sprintf("shop:k%d", i), fmt.Sprintf("fk%d", i), value,
			envelope.Header{Key: "trace", Value: []byte(fmt.Sprint("t-", i))},
			envelope.Header{Key: "tenant", Value: []byte("acme")})
	}
	recs[0].Key = "" // no forward key
	res := tg.Send(t.Context(), recs)
	require.Len(t, res, n)
	byRef := map[string]int{}
	for i, r := range res {
		require.NoError(t, r.Err, "record %d", i)
		require.NotEmpty(t, r.Ref, "record %d", i)
		_, dup := byRef[r.Ref]
		require.False(t, dup, "reference %s returned twice", r.Ref)
		byRef[r.Ref] = i
	}
	got := b.Received(t, "biz", n)
	seen := map[int]bool{}
	for _, g := range got {
		i, ok := byRef[g.Ref]
		require.True(t, ok, "a stored record's reference %q was not returned by Send", g.Ref)
		require.False(t, seen[i], "record %d stored twice", i)
		seen[i] = true
		want := recs[i]
		require.Equal(t, want.ID, g.ID, "record %d", i)
		require.Equal(t, want.Key, g.Key, "record %d's key", i)
		require.Equal(t, want.Value, g.Value, "record %d's value", i)
		if s.OrderedHeaders {
			require.Equal(t, want.Headers, g.Headers, "record %d's headers", i)
		} else {
			require.ElementsMatch(t, want.Headers, g.Headers, "record %d's headers", i)
		}
	}
}

// One key's records arrive in the order sent, in one partition or queue,
// with a record about the size of ingest's default payload limit (1 MiB,
// above franz-go's default batch size) among them.
func orderWithinAKey(t *testing.T, s Suite) {
	const n, keys = 30, 3
	b := s.New(t, map[string]int{"ordered": 8})
	tg := b.Target(t, Options{})
	var recs []forwarder.Record
	for i := range n {
		k := fmt.Sprintf("key-%d", i%keys)
		value := []byte(fmt.Sprint("v", i))
		if i == 13 {
			value = s.payload(1_020_000, 4)
		}
		recs = append(recs, record("ordered", fmt.Sprintf("shop:%s-%02d", k, i), k, value,
			envelope.Header{Key: "trace", Value: []byte("t")}))
	}
	for i, r := range tg.Send(t.Context(), recs) {
		require.NoError(t, r.Err, "record %d", i)
	}
	got := b.Received(t, "ordered", n)
	perKey := map[string][]string{}
	partition := map[string]int{}
	for _, g := range got {
		if p, ok := partition[g.Key]; ok {
			require.Equal(t, p, g.Partition, "key %s changed partition", g.Key)
		}
		partition[g.Key] = g.Partition
		perKey[g.Key] = append(perKey[g.Key], g.ID)
		if g.ID == recs[13].ID {
			require.Equal(t, recs[13].Value, g.Value, "the large record arrived intact")
			if s.OrderedHeaders {
				require.Equal(t, recs[13].Headers, g.Headers, "the large record's headers")
			} else {
				require.ElementsMatch(t, recs[13].Headers, g.Headers, "the large record's headers")
			}
		}
	}
	require.Len(t, perKey, keys)
	for k, got := range perKey {
		var want []string
		for _, r := range recs {
			if r.Key == k {
				want = append(want, r.ID)
			}
		}
		require.Equal(t, want, got, "the order of key %s", k)
	}
}

// Many records of one key in one Send, together far more than one batch
// holds: one result per record in the order given, each stored once, in
// order, in batches the broker accepts (a Kafka broker with default
// settings refuses batches over 1,048,588 bytes).
func batching(t *testing.T, s Suite) {
	const n = 60
	b := s.New(t, map[string]int{"biz": 1})
	tg := b.Target(t, Options{Linger: 50 * time.Millisecond})
	recs := make([]forwarder.Record, n)
	for i := range recs {
		recs[i] = record("biz", fmt.Sprintf("shop:%02d", i), "k", s.payload(40_000, byte(i)))
	}
	res := tg.Send(t.Context(), recs)
	require.Len(t, res, n)
	refs := map[string]int{}
	for i, r := range res {
		require.NoError(t, r.Err, "record %d", i)
		refs[r.Ref] = i
	}
	require.Len(t, refs, n, "one reference per record")
	got := b.Received(t, "biz", n)
	for i, g := range got {
		require.Equal(t, recs[i].ID, g.ID, "record %d in order", i)
		require.Equal(t, i, refs[g.Ref], "record %d under its reference", i)
		require.Equal(t, recs[i].Value, g.Value, "record %d's value", i)
	}
}

func ids(rs []Received) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
