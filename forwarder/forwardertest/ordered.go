package forwardertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
)

// RefusingBroker is a Broker that can refuse one send in the middle of a
// pipeline of them. The cases of a target that is a
// forwarder.OrderedTarget need it.
type RefusingBroker interface {
	Broker
	// RefuseAfter makes the broker store the next `after` send requests
	// to topic and refuse the one after them for good (a non-retriable
	// error on every record of it); later requests are stored again. It
	// returns how many requests it refused so far and the error the
	// refused records' failures wrap (errors.Is).
	RefuseAfter(t *testing.T, topic string, after int) (refused func() int, cause error)
}

// ordered returns b's target as a forwarder.OrderedTarget and b as a
// RefusingBroker; it skips the case for a target that is not ordered
// (it sends a key's records head of line through Send).
func ordered(t *testing.T, b Broker, o Options) (forwarder.OrderedTarget, RefusingBroker) {
	t.Helper()
	ot, ok := b.Target(t, o).(forwarder.OrderedTarget)
	if !ok {
		t.Skip("the target is not a forwarder.OrderedTarget")
	}
	rb, ok := b.(RefusingBroker)
	require.True(t, ok, "the broker of an OrderedTarget must be a forwardertest.RefusingBroker")
	return ot, rb
}

// keyed returns perKey records of each of keys, interleaved (k0 #0, k1
// #0, k0 #1, ...), ids "shop:<prefix>k<key>-<n>", each value
// "k<key>/<n>/" padded to pad bytes.
func keyed(topic, prefix string, keys, perKey, pad int) []forwarder.Record {
	var recs []forwarder.Record
	for n := range perKey {
		for k := range keys {
			v := fmt.Sprintf("k%d/%d/", k, n)
			v += strings.Repeat("x", max(pad-len(v), 0))
			recs = append(recs, record(topic, fmt.Sprintf("shop:%sk%d-%d", prefix, k, n), fmt.Sprintf("k%d", k), []byte(v)))
		}
	}
	return recs
}

// inOrderRule asserts SendInOrder's rule on its results: per key, the
// acknowledged records come first, then only failures, and those behind
// the key's first failure wrap forwarder.ErrBehindFailed and are not
// permanent. It returns the acknowledged records' ids, per key in order.
func inOrderRule(t *testing.T, recs []forwarder.Record, res []forwarder.Result) map[string][]string {
	t.Helper()
	require.Len(t, res, len(recs))
	acked := map[string][]string{}
	failed := map[string]bool{}
	for i, r := range res {
		k := recs[i].Key
		switch {
		case failed[k]:
			require.Error(t, r.Err, "record %d of key %s acknowledged behind a failed one", i, k)
			require.ErrorIs(t, r.Err, forwarder.ErrBehindFailed, "record %d of key %s", i, k)
			require.False(t, forwarder.IsPermanent(r.Err), "record %d: %v", i, r.Err)
		case r.Err != nil:
			failed[k] = true
		default:
			require.NotEmpty(t, r.Ref, "record %d", i)
			acked[k] = append(acked[k], recs[i].ID)
		}
	}
	return acked
}

// storedInOrder asserts the topic holds exactly the acknowledged records
// (acked: ids per key, in order), each key's in its order on one
// partition.
func storedInOrder(t *testing.T, b Broker, topic string, acked map[string][]string) {
	t.Helper()
	total := 0
	for _, ids := range acked {
		total += len(ids)
	}
	got := map[string][]string{}
	partition := map[string]int{}
	for _, g := range b.Received(t, topic, total) {
		if p, ok := partition[g.Key]; ok {
			require.Equal(t, p, g.Partition, "key %s changed partition", g.Key)
		}
		partition[g.Key] = g.Partition
		got[g.Key] = append(got[g.Key], g.ID)
	}
	for k, ids := range acked {
		require.Equal(t, ids, got[k], "the stored order of key %s", k)
	}
	require.Len(t, got, len(acked), "keys stored")
}

// A key's records go out one after the other without waiting for each
// other's acknowledgement (small batches: a key spans many sends in
// flight) and are stored in their order, each key on one partition.
func inOrderPipelined(t *testing.T, s Suite) {
	b := s.New(t, map[string]int{"biz": 3})
	tg, _ := ordered(t, b, Options{BatchBytes: 4 << 10})
	recs := keyed("biz", "", 4, 100, 300)
	res := tg.SendInOrder(t.Context(), recs)
	for i, r := range res {
		require.NoError(t, r.Err, "record %d", i)
	}
	acked := inOrderRule(t, recs, res)
	for k := range 4 {
		require.Len(t, acked[fmt.Sprintf("k%d", k)], 100, "key k%d", k)
	}
	storedInOrder(t, b, "biz", acked)
}

// A send the broker refuses in the middle of the pipeline (sends before
// it stored, more in flight behind it): the records before it are
// acknowledged and stored, its records fail with the broker's error, and
// every later record of their keys fails with ErrBehindFailed and is not
// stored. The key goes on with the next SendInOrder.
func inOrderRefusedMidPipeline(t *testing.T, s Suite) {
	for _, after := range []int{1, 3, 6} {
		t.Run(fmt.Sprint("after ", after), func(t *testing.T) {
			t.Parallel()
			b := s.New(t, map[string]int{"biz": 1})
			tg, rb := ordered(t, b, Options{BatchBytes: 2 << 10})
			refused, cause := rb.RefuseAfter(t, "biz", after)
			recs := keyed("biz", "", 3, 60, 300)
			res := tg.SendInOrder(t.Context(), recs)
			require.Equal(t, 1, refused())
			acked := inOrderRule(t, recs, res)
			nAcked, nBehind, nRefused := 0, 0, 0
			for i, r := range res {
				switch {
				case r.Err == nil:
					nAcked++
				case errors.Is(r.Err, forwarder.ErrBehindFailed):
					nBehind++
				default:
					require.True(t, forwarder.IsPermanent(r.Err), "record %d: %v", i, r.Err)
					require.ErrorIs(t, r.Err, cause, "record %d", i)
					nRefused++
				}
			}
			require.Positive(t, nAcked, "sends before the refused one were stored")
			require.Positive(t, nRefused, "records of the refused send")
			require.Positive(t, nBehind, "records behind the refused send")
			storedInOrder(t, b, "biz", acked)

			next := keyed("biz", "again-", 1, 3, 10)
			for i, r := range tg.SendInOrder(t.Context(), next) {
				require.NoError(t, r.Err, "record %d after the refusal", i)
			}
			for _, r := range next {
				acked[r.Key] = append(acked[r.Key], r.ID)
			}
			storedInOrder(t, b, "biz", acked)
		})
	}
}
