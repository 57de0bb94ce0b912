package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

const (
	bizID         = "soak"
	controlTopic  = "soak.control"
	businessTopic = "soak.events"
	groupName     = "eventcenter-soak"
)

var errLocal = errors.New("local transaction failed")

// workload runs the producers.
type workload struct {
	cfg      *Config
	truth    *truth
	verify   string
	brokers  []string
	produced atomic.Int64
	errs     atomic.Int64 // sends that failed (the message is then settled by check-back)
	seq      atomic.Int64
	wg       sync.WaitGroup
	timers   sync.WaitGroup
}

func payloadOf(key string) []byte { return []byte("payload-" + key) }

// orderKeys is how many order keys the producers use; orderFKPrefix
// starts the forward key of an ordered message (then its order key).
const (
	orderKeys     = 16
	orderFKPrefix = "ok-"
)

// pick chooses a message kind: 55% commit, 15% rollback, 10%
// commit-before-prepare, 15% left for check-back, 5% orphans.
func pick(r *rand.Rand) kind {
	switch n := r.IntN(100); {
	case n < 55:
		return kindCommit
	case n < 70:
		return kindRollback
	case n < 80:
		return kindCommitFirst
	case n < 95:
		return kindCheckback
	default:
		return kindOrphan
	}
}

// run produces until ctx ends; finish bounds sends already under way and
// the decisions still scheduled.
func (w *workload) run(ctx, finish context.Context) error {
	opts := []kgo.Opt{kgo.MetadataMinAge(250 * time.Millisecond), kgo.MetadataMaxAge(2 * time.Second)}
	p, err := clientlib.NewProducer(clientlib.WithBrokers(w.brokers...), clientlib.WithControlTopic(controlTopic),
		clientlib.WithKgoOptions(opts...), clientlib.WithLogger(w.cfg.Logger))
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	raw, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.brokers...), kgo.DefaultProduceTopic(controlTopic)}, opts...)...)
	if err != nil {
		p.Close()
		return fmt.Errorf("raw producer: %w", err)
	}
	var tick <-chan time.Time
	if w.cfg.Rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / float64(w.cfg.Rate)))
		defer t.Stop()
		tokens := make(chan time.Time, w.cfg.Producers)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case v := <-t.C:
					select {
					case tokens <- v:
					default: // producers are behind (a fault): do not pile up
					}
				}
			}
		}()
		tick = tokens
	}
	for i := range w.cfg.Producers {
		r := rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(i)+1))
		w.wg.Go(func() {
			for {
				if tick != nil {
					select {
					case <-ctx.Done():
						return
					case <-tick:
					}
				} else if ctx.Err() != nil {
					return
				}
				w.one(finish, r, p, raw)
			}
		})
	}
	w.wg.Wait()
	w.timers.Wait()
	p.Close()
	raw.Close()
	return nil
}

func (w *workload) one(ctx context.Context, r *rand.Rand, p *clientlib.Producer, raw *kgo.Client) {
	k := pick(r)
	key := fmt.Sprintf("m%07d", w.seq.Add(1))
	orderKey := ""
	if k != kindCommitFirst && r.IntN(2) == 0 {
		// Half the messages that go through clientlib carry one of a few
		// order keys, forward-keyed by it (one business partition per key):
		// the ordering invariant reads them back in commit order.
		orderKey = fmt.Sprintf("o%02d", r.IntN(orderKeys))
	}
	m := &message{key: key, kind: k, orderKey: orderKey}
	w.truth.add(m)
	msg := clientlib.Message{BizID: bizID, Key: key, Payload: payloadOf(key), ForwardTopic: businessTopic,
		ForwardKey: "fk-" + key, Verify: w.verify, Headers: []clientlib.Header{{Key: "kind", Value: []byte(kindNames[k])}}}
	if orderKey != "" {
		msg.OrderKey, msg.ForwardKey = orderKey, orderFKPrefix+orderKey
	}
	sendCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	decide := func(d decision) { w.truth.update(key, func(m *message) { m.decision, m.decidedAt = d, time.Now() }) }
	var err error
	switch k {
	case kindCommit, kindRollback:
		err = p.Transact(sendCtx, msg, func(context.Context) error {
			if k == kindRollback {
				decide(rolledBack)
				return errLocal
			}
			decide(committed)
			return nil
		})
		sent := err == nil || err == errLocal //nolint:errorlint // errLocal alone: the ROLLBACK was sent
		w.truth.update(key, func(m *message) {
			if m.decision == undecided { // the PREPARE failed: no local transaction ran
				m.decision = rolledBack
				return
			}
			m.envelopeSent = sent
		})
		if sent {
			err = nil
		}
	case kindCommitFirst:
		decide(committed)
		// Raw records are retried until written (until finish ends): a
		// COMMIT without its PREPARE could never be forwarded.
		if err = produceRaw(ctx, raw, envelope.Envelope{Type: envelope.Commit, BizID: bizID, MessageKey: key}); err == nil {
			w.truth.update(key, func(m *message) { m.envelopeSent = true })
			err = produceRaw(ctx, raw, envelope.Envelope{Type: envelope.Prepare, BizID: bizID, MessageKey: key,
				Payload: msg.Payload, ForwardTopic: msg.ForwardTopic, ForwardKey: msg.ForwardKey, Verify: w.verify, Headers: msg.Headers})
		}
		if err != nil {
			w.truth.update(key, func(m *message) { m.incomplete = true })
		}
	case kindCheckback, kindOrphan:
		if err = p.Prepare(sendCtx, msg); err != nil {
			decide(rolledBack) // never ran; the check-back says so
			break
		}
		if k == kindOrphan {
			break
		}
		// The local transaction ends a little later, commit or rollback;
		// the center learns it only by check-back.
		d := committed
		if r.IntN(3) == 0 {
			d = rolledBack
		}
		delay := time.Duration(r.Int64N(int64(3 * time.Second)))
		w.timers.Go(func() {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			decide(d)
		})
	}
	if err != nil {
		w.errs.Add(1)
	}
	w.produced.Add(1)
}

func produceRaw(ctx context.Context, cl *kgo.Client, e envelope.Envelope) error {
	rec, err := envelope.Encode(e)
	if err != nil {
		return err
	}
	kr := kafkarec.Record(controlTopic, rec)
	for {
		err := cl.ProduceSync(ctx, kr).FirstErr()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // back off before writing the record again
	}
}
