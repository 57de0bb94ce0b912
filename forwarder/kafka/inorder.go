package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/forwarder"
)

// SendInOrder: pipelined sends of a forward key's records.
//
// What it relies on (franz-go, the Kafka protocol):
//
//   - A forward key's records have one Kafka key, so the default
//     partitioner puts them on one partition, and one client produces them:
//     franz-go keeps one buffer per partition and writes it in produce order.
//   - The idempotent producer (franz-go's default): up to 5 produce requests
//     in flight per broker, each batch numbered; the broker writes a batch
//     only if it follows the partition's last one (else
//     OUT_OF_ORDER_SEQUENCE_NUMBER, not written), and franz-go resends a
//     retriable failure and what follows it in order. So retries never
//     reorder a partition. Without idempotence franz-go allows one request
//     in flight per broker by default, which keeps the order too; a client
//     given more (ClientOptions) does not, and SendInOrder then sends head
//     of line.
//   - A batch that fails for good (a non-retriable error, or its retries or
//     its records' context spent while it is safe to fail) fails with every
//     batch buffered behind it on its partition (recBuf.failAllRecords in
//     franz-go's sink.go), and the broker refuses the batches already in
//     flight behind it (their sequence no longer follows). So on a
//     partition a failed record is never followed by an acknowledged one
//     that was buffered before the failure.
//
// What it adds: records buffered after that failure would go out under a
// fresh producer epoch and be written. The ordered client is flushed by
// hand, and one SendInOrder at a time buffers all its records before
// anything is sent; a record franz-go would fail before buffering it (too
// large) is failed here first, with every later one of its key. A record
// too large for a shared batch goes alone through the large-record client
// once everything before it is acknowledged. Last, every record behind a
// key's first failure is failed (forwarder.ErrBehindFailed).

// maxOrderedBuffered bounds the ordered client's buffer: above any Send.
const maxOrderedBuffered = 1 << 20

// orderedOpts are the ordered client's own options.
func orderedOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ManualFlushing(), kgo.MaxBufferedRecords(maxOrderedBuffered)}
}

// keepsPartitionOrder tells whether cl keeps a partition's records in
// produce order across retries: idempotent, or one request in flight.
func keepsPartitionOrder(cl *kgo.Client) bool {
	if off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); !off {
		return true
	}
	n, _ := cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker).(int)
	return n == 1
}

// PipelinesOrder tells whether SendInOrder pipelines a key's records
// (false: the client's options allow reordering, and it sends them head
// of line).
func (t *Target) PipelinesOrder() bool { return t.pipelines }

// SendInOrder implements forwarder.OrderedTarget (see above).
func (t *Target) SendInOrder(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	keys := forwardKeys(recs)
	if !t.pipelines {
		return t.sendHeadOfLine(ctx, recs, keys)
	}
	res := make([]forwarder.Result, len(recs))
	krs := make([]kgo.Record, len(recs))
	failed := map[string]bool{} // keys with a record failed before the flush
	var wg sync.WaitGroup

	t.ordMu.Lock()
	defer t.ordMu.Unlock()
	flush := func() {
		// The records carry ctx: its end fails those not yet in flight,
		// and the flush waits for every outcome, as Send does.
		_ = t.ord.Flush(context.WithoutCancel(ctx))
		wg.Wait()
	}
	for i := range recs {
		k := keys[i]
		if k != "" && failed[k] {
			continue // failed by behind below
		}
		toKgo(&krs[i], &recs[i])
		size := recordSize(&krs[i])
		switch {
		case size+RecordFraming > t.maxMsg:
			// franz-go would fail it alone, before buffering it.
			res[i].Err = t.wrap(t.classify(recs[i].Topic, size, kerr.MessageTooLarge))
			failed[k] = k != ""
		case t.big != nil && size+RecordFraming > t.smallMax:
			flush()
			if k != "" && firstFailed(res[:i], keys[:i], k) {
				failed[k] = true
				continue
			}
			wg.Add(1)
			t.big.Produce(ctx, &krs[i], t.promise(&wg, res, i, size))
			wg.Wait()
			failed[k] = k != "" && res[i].Err != nil
		default:
			wg.Add(1)
			t.ord.Produce(ctx, &krs[i], t.promise(&wg, res, i, size))
		}
	}
	flush()
	t.behind(recs, res, keys)
	return res
}

// promise records record i's outcome in res.
func (t *Target) promise(wg *sync.WaitGroup, res []forwarder.Result, i, size int) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		defer wg.Done()
		if err != nil {
			res[i].Err = t.wrap(t.classify(r.Topic, size, err))
			return
		}
		res[i].Ref = Ref(r)
	}
}

// sendHeadOfLine sends a key's records one after the other, each once the
// one before is acknowledged: rounds of Send, each with the next record of
// every key (and every record without a key in the first).
func (t *Target) sendHeadOfLine(ctx context.Context, recs []forwarder.Record, keys []string) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	pending := make([]int, len(recs))
	for i := range pending {
		pending[i] = i
	}
	failed := map[string]bool{}
	for len(pending) > 0 {
		var round, rest []int
		inRound := map[string]bool{}
		for _, i := range pending {
			switch k := keys[i]; {
			case k != "" && failed[k]:
				// failed by behind below
			case k != "" && inRound[k]:
				rest = append(rest, i)
			default:
				inRound[k] = k != ""
				round = append(round, i)
			}
		}
		batch := make([]forwarder.Record, len(round))
		for j, i := range round {
			batch[j] = recs[i]
		}
		for j, r := range t.Send(ctx, batch) {
			i := round[j]
			res[i] = r
			if r.Err != nil && keys[i] != "" {
				failed[keys[i]] = true
			}
		}
		pending = rest
	}
	t.behind(recs, res, keys)
	return res
}

// behind fails every record after the first failed one of its key.
func (t *Target) behind(recs []forwarder.Record, res []forwarder.Result, keys []string) {
	first := map[string]error{}
	for i, k := range keys {
		if k == "" {
			continue
		}
		cause, failed := first[k]
		if !failed {
			if res[i].Err != nil {
				first[k] = res[i].Err
			}
			continue
		}
		if res[i].Err == nil && res[i].Ref != "" {
			// What the rules above exclude; should it happen, the record
			// is on the broker ahead of an earlier one of its key.
			t.log.Error("record acknowledged behind a failed record of its forward key: the key's order may be broken",
				"topic", recs[i].Topic, "key", recs[i].Key, "ref", res[i].Ref, "id", recs[i].ID)
		}
		res[i] = forwarder.Result{Err: fmt.Errorf("kafka target %q: record for topic %q, forward key %q: %w (it failed with: %v)",
			t.name, recs[i].Topic, recs[i].Key, forwarder.ErrBehindFailed, cause)}
	}
}

// firstFailed tells whether a record of key k in res failed.
func firstFailed(res []forwarder.Result, keys []string, k string) bool {
	for i := range res {
		if keys[i] == k && res[i].Err != nil {
			return true
		}
	}
	return false
}

// forwardKeys returns each record's order unit: its topic and Kafka key
// ("" for a record without a key, which keeps no order).
func forwardKeys(recs []forwarder.Record) []string {
	keys := make([]string, len(recs))
	for i, r := range recs {
		if r.Key != "" {
			keys[i] = r.Topic + "\x00" + r.Key
		}
	}
	return keys
}
