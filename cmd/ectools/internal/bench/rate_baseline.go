package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
)

// RateBaseline is the transport at the run's rate, no center: the same
// producers (clientlib, PREPARE then COMMIT, the same payload, pacing and
// concurrency) send to a fresh control topic on the same broker, and a
// consumer reads that topic directly. Its latency is from the end of the
// local transaction (as the center path's commit → forward) to the COMMIT
// read back: what the machine, the producers and the broker cost at that
// rate without the center.
type RateBaseline struct {
	Messages int64   `json:"messages"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"rate"`
	// CommitToRead is local commit → the COMMIT record consumed.
	CommitToRead Latency `json:"commit_to_read"`
	// AddedP50Ms and AddedP99Ms are the center path's commit → forward
	// p50 and p99 minus this baseline's: the latency the center adds.
	AddedP50Ms float64 `json:"added_by_center_p50_ms"`
	AddedP99Ms float64 `json:"added_by_center_p99_ms"`
}

// rateBaseline sends at cfg.Rate for d through clientlib producers to a
// fresh topic and reads the COMMITs back.
func rateBaseline(ctx context.Context, cfg Config, brokers []string, topic string, d time.Duration) (*RateBaseline, error) {
	if err := createTopics(ctx, brokers, cfg.Partitions, time.Hour, topic); err != nil {
		return nil, err
	}
	defer deleteTopics(context.WithoutCancel(ctx), brokers, topic)
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("rate baseline: consumer: %w", err)
	}
	defer cons.Close()
	producers := make([]*clientlib.Producer, cfg.Producers)
	for i := range producers {
		p, err := clientlib.NewProducer(clientlib.WithBrokers(brokers...), clientlib.WithControlTopic(topic),
			clientlib.WithDefaultVerify("http://127.0.0.1:1/unused"), clientlib.WithLogger(cfg.Logger),
			clientlib.WithKgoOptions(kgo.MaxBufferedRecords(1<<16)))
		if err != nil {
			return nil, fmt.Errorf("rate baseline: producer: %w", err)
		}
		defer p.Close()
		producers[i] = p
	}

	var (
		mu        sync.Mutex
		committed = map[string]time.Time{}
		h         hist
		read      int64
		next      atomic.Int64
		sent      atomic.Int64
		failed    atomic.Value
		wg        sync.WaitGroup
		payload   = make([]byte, cfg.Payload)
		start     = time.Now()
	)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range cfg.Producers * cfg.Concurrency {
		p := producers[i%cfg.Producers]
		wg.Go(func() {
			for {
				seq := next.Add(1) - 1
				if time.Since(start) >= d || lctx.Err() != nil {
					return
				}
				due := start.Add(time.Duration(float64(seq) / cfg.Rate * float64(time.Second)))
				if w := time.Until(due); w > 0 {
					select {
					case <-time.After(w):
					case <-lctx.Done():
						return
					}
				}
				key := "atrate-" + strconv.FormatInt(seq, 10)
				msg := clientlib.Message{BizID: bizID, Key: key, Payload: payload, ForwardTopic: topic + ".unused", ForwardKey: key,
					Headers: []clientlib.Header{{Key: seqHeader, Value: []byte(strconv.FormatInt(seq, 10))}}}
				err := p.Transact(lctx, msg, func(context.Context) error {
					mu.Lock()
					committed[key] = time.Now()
					mu.Unlock()
					return nil
				})
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				sent.Add(1)
			}
		})
	}
	sendDone := make(chan struct{})
	go func() { wg.Wait(); close(sendDone) }()

	var dec envelope.Decoder
	deadline := time.Now().Add(d + 30*time.Second)
	for {
		select {
		case <-sendDone:
			if read >= sent.Load() {
				goto done
			}
		default:
		}
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			return nil, fmt.Errorf("rate baseline: %d of %d COMMITs read back within %s", read, sent.Load(), d+30*time.Second)
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cons.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			stop()
			wg.Wait()
			return nil, err
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			er := envelope.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, hd := range r.Headers {
				er.Headers = append(er.Headers, envelope.Header{Key: hd.Key, Value: hd.Value})
			}
			e, err := dec.Decode(er)
			if err != nil || e.Type != envelope.Commit {
				return
			}
			mu.Lock()
			t, ok := committed[e.MessageKey]
			delete(committed, e.MessageKey)
			mu.Unlock()
			if ok {
				h.add(now.Sub(t))
				read++
			}
		})
	}
done:
	if err, _ := failed.Load().(error); err != nil {
		return nil, fmt.Errorf("rate baseline: send: %w", err)
	}
	secs := time.Since(start).Seconds()
	return &RateBaseline{Messages: read, Seconds: secs, Rate: float64(read) / secs, CommitToRead: h.summary()}, nil
}
