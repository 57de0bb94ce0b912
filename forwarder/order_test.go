package forwarder_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// commitOrdered prepares and commits n messages of one order key through
// the fast path (inline sends, handoff), one COMMIT per Apply, as ingest
// applies them in control-record order; it returns their ids in commit
// order. Their forward key is the order key, or with forwardKeyEach one
// of each message's own.
func (h *harness) commitOrdered(t *testing.T, a *forwarder.Applier, n int, orderKey string, forwardKeyEach bool) []string {
	t.Helper()
	var ids []string
	for range n {
		h.seq++
		key := fmt.Sprintf("key-%d", h.seq)
		at := h.clock.Now()
		fkey := orderKey
		if forwardKeyEach {
			fkey = "fk-" + key
		}
		body := &state.Body{Payload: []byte("p-" + key), Topic: "biz-topic", ForwardKey: fkey, OrderKey: orderKey, CheckAfter: time.Minute}
		for _, ev := range []state.Event{{Kind: state.KindPrepare, At: at, Body: body}, {Kind: state.KindCommit, At: at}} {
			_, err := a.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{{BizID: "shop", Key: key, Partition: 0, Event: ev}}})
			require.NoError(t, err)
		}
		ids = append(ids, "shop:"+key)
	}
	return ids
}

// failFirst is a fail rule (fakeTarget.setFail) that refuses the sends of
// id its first n times with errBroker.
func failFirst(id string, n int32) func(forwarder.Record) error {
	var fails atomic.Int32
	return func(r forwarder.Record) error {
		if r.ID == id && fails.Add(1) <= n {
			return errBroker
		}
		return nil
	}
}

// firstOccurrences returns the ids the target received, first occurrence
// of each only, in order.
func firstOccurrences(ft *fakeTarget) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range ft.sent() {
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r.ID)
		}
	}
	return out
}

// The head of a key fails twice; the later messages of the key wait for it
// (fast path and scan alike) and arrive after it, in commit order. With
// ordering off, they overtake it: the rule is what keeps the order.
func TestOrderedKeyWaitsForItsFailingHead(t *testing.T) {
	t.Parallel()
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *forwarder.Config) { c.Ordered = func() bool { return ordered } })
			h.targets["main"].setFail(failFirst("shop:key-1", 2))
			ids := h.commitOrdered(t, h.f.Applier(h.st), 5, "order-7", false)
			require.Eventually(t, func() bool {
				h.clock.Advance(500 * time.Millisecond) // the head's backoff
				return len(firstOccurrences(h.targets["main"])) == len(ids)
			}, 10*time.Second, 5*time.Millisecond)
			got := firstOccurrences(h.targets["main"])
			if ordered {
				require.Equal(t, ids, got, "commit order")
			} else {
				require.NotEqual(t, ids, got, "without the rule the failing head is overtaken")
			}
		})
	}
}

// A DEAD head holds the key unless its bizID releases on DEAD.
func TestOrderedDeadHeadHoldsOrReleases(t *testing.T) {
	t.Parallel()
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *forwarder.Config) {
				c.Ordered = func() bool { return true }
				c.ReleaseOnDead = func(biz string) bool { return release && biz == "shop" }
				if release {
					// Only the store's count of what it woke may start the
					// scan for the next message; the chain does the rest.
					c.ScanInterval = time.Hour
				}
			})
			h.targets["main"].setFail(func(r forwarder.Record) error {
				if r.ID == "shop:key-1" {
					return forwarder.Permanent(errBroker)
				}
				return nil
			})
			ids := h.commitOrdered(t, h.f.Applier(h.st), 3, "order-7", false)
			head := h.waitStatus(t, state.Message{BizID: "shop", Key: "key-1"}, state.SendDead)
			if release {
				require.Zero(t, head.OrderSeq)
				require.Eventually(t, func() bool { return len(firstOccurrences(h.targets["main"])) == 2 }, 10*time.Second, 5*time.Millisecond)
				require.Equal(t, ids[1:], firstOccurrences(h.targets["main"]))
				return
			}
			require.Positive(t, head.OrderSeq)
			time.Sleep(100 * time.Millisecond) // scans run every 10ms
			h.clock.Advance(time.Hour)
			time.Sleep(100 * time.Millisecond)
			require.Empty(t, firstOccurrences(h.targets["main"]), "the DEAD head holds the key")
		})
	}
}

// plainStore hides store.NextClaimer: a store that only marks sent (MySQL,
// SQLite), whose next messages wait for the wake and the scan.
type plainStore struct{ forwarder.Store }

// While the head is being sent the later messages of its key park; the
// head's sent mark leases the next one and its worker sends it at once,
// and so on down the key (chained: no scan involved, the parked messages'
// park is far off on the test clock). Over a store that cannot, the wake
// and the scan do it. Both keep commit order.
func TestOrderedNextGoesWithItsHeadsMark(t *testing.T) {
	t.Parallel()
	for _, chain := range []bool{true, false} {
		t.Run(fmt.Sprintf("chain=%v", chain), func(t *testing.T) {
			t.Parallel()
			var wrap func(forwarder.Store) forwarder.Store
			if !chain {
				wrap = func(s forwarder.Store) forwarder.Store { return plainStore{s} }
			}
			h := newHarnessWith(t, func(c *forwarder.Config) { c.Ordered = func() bool { return true } }, wrap)
			gate := make(chan struct{})
			h.targets["main"].mu.Lock()
			h.targets["main"].gate = gate
			h.targets["main"].mu.Unlock()
			ids := h.commitOrdered(t, h.f.Applier(h.st), 5, "order-7", false)
			for _, id := range ids[1:] {
				m := h.get(t, state.Message{BizID: "shop", Key: id[len("shop:"):]})
				require.True(t, m.SendNextAt.After(h.clock.Now()), "%s parked behind the head", id)
			}
			close(gate)
			require.Eventually(t, func() bool { return len(firstOccurrences(h.targets["main"])) == len(ids) },
				10*time.Second, 5*time.Millisecond)
			require.Equal(t, ids, firstOccurrences(h.targets["main"]), "commit order")
			want := 0.0
			if chain {
				want = float64(len(ids) - 1)
			}
			require.Equal(t, want, h.counter(t, "eventcenter_forward_order_chained_total"))
		})
	}
}
