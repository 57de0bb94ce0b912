package forwarder_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
)

// orderedFake is a fakeTarget that keeps a forward key's order
// (forwarder.OrderedTarget) as the Kafka target does: records go in
// order, and once one of a key fails the later ones of the key fail with
// ErrBehindFailed, unsent.
type orderedFake struct{ *fakeTarget }

func (o orderedFake) SendInOrder(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	failed := map[string]error{}
	for i := range recs {
		if err, ok := failed[recs[i].Key]; ok {
			res[i].Err = fmt.Errorf("%w: %w", forwarder.ErrBehindFailed, err)
			continue
		}
		res[i] = o.Send(ctx, recs[i:i+1])[0]
		if res[i].Err != nil {
			failed[recs[i].Key] = res[i].Err
		}
	}
	return res
}

// A hot key's messages go in runs (store.Claim.Run): the head's sent mark
// leases the next ones together and a worker sends them as one batch,
// through SendInOrder where the target keeps a key's order, else head of
// line. A send refused in the middle of a run fails what is behind it in
// the run without an attempt (ErrBehindFailed, never DEAD); they go again
// after the refused one, and every message arrives in commit order.
func TestOrderedRunsKeepOrderWhenASendFailsMidRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ inOrder, fkeys bool }{{true, false}, {false, false}, {true, true}} {
		inOrder := tc.inOrder
		t.Run(fmt.Sprintf("OrderedTarget=%v/ForwardKeyEach=%v", tc.inOrder, tc.fkeys), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *forwarder.Config) {
				c.Ordered = func() bool { return true }
				c.BatchSize = 8
				if inOrder {
					c.Targets["main"] = orderedFake{c.Targets["main"].(*fakeTarget)}
				}
			})
			ft := h.targets["main"]
			gate := make(chan struct{})
			ft.mu.Lock()
			ft.gate = gate
			ft.mu.Unlock()
			ft.setFail(failFirst("shop:key-5", 2))
			// With tc.fkeys each message has its own forward key: a run
			// goes head of line even through an OrderedTarget.
			ids := h.commitOrdered(t, h.f.Applier(h.st), 40, "order-7", tc.fkeys)
			close(gate) // key-1 was in flight; the rest parked behind it
			require.Eventually(t, func() bool {
				h.clock.Advance(500 * time.Millisecond) // key-5's backoff
				return len(firstOccurrences(ft)) == len(ids)
			}, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, ids, firstOccurrences(ft), "commit order")
			require.Positive(t, h.counter(t, "eventcenter_forward_order_behind_failed_total"), "key-5 failed in the middle of a run")
			for _, id := range ids {
				m := h.waitStatus(t, state.Message{BizID: "shop", Key: id[len("shop:"):]}, state.SendSent)
				if id == "shop:key-5" {
					require.Equal(t, 2, m.SendAttempts, "its two refusals")
					continue
				}
				require.Zero(t, m.SendAttempts, "%s: behind a failure costs no attempt", id)
			}
			const runs = "eventcenter_forward_order_run_messages_total"
			if inOrder && !tc.fkeys {
				require.Positive(t, h.counter(t, runs, "send", "in_order"), "a run of one forward key goes through SendInOrder")
				require.Zero(t, h.counter(t, runs, "send", "head_of_line"))
			} else {
				require.Positive(t, h.counter(t, runs, "send", "head_of_line"))
				require.Zero(t, h.counter(t, runs, "send", "in_order"))
			}
			if inOrder && !tc.fkeys {
				ft.mu.Lock()
				most := slices.Max(ft.sizes)
				ft.mu.Unlock()
				require.Equal(t, 1, most, "orderedFake sends one record per Send")
				require.Greater(t, h.counter(t, "eventcenter_forward_order_chained_total"), 0.0)
			}
		})
	}
}
