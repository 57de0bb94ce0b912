package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// Forward targets of the embedded center (--target).
const (
	TargetKafka    = "kafka"
	TargetRocketMQ = "rocketmq"
)

// readForwards reads the business topic on the forward target and tells
// tr of every forwarded message, until the returned stop is called.
func readForwards(ctx context.Context, cfg Config, brokers []string, topic string, tr *tracker) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	stop = func() { cancel(); <-done }
	if cfg.Target == TargetRocketMQ {
		go func() {
			defer close(done)
			readRocketMQ(ctx, cfg.rmq, topic, tr)
		}()
		return stop, nil
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("business topic consumer: %w", err)
	}
	go func() {
		defer close(done)
		defer cons.Close()
		for {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == seqHeader {
						if seq, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
							tr.seen(seq, now, r.Timestamp)
						}
						return
					}
				}
			})
		}
	}()
	return stop, nil
}

// readRocketMQ follows what the RocketMQ stand-in stored on topic, in
// store order, straight from its memory (no consumer: the stand-in
// signals every store). A message's produce time is its born timestamp,
// stamped by the center's RocketMQ client (milliseconds).
func readRocketMQ(ctx context.Context, s *rocketmqfake.Server, topic string, tr *tracker) {
	for n := 0; ctx.Err() == nil; {
		msgs, more := s.MessagesSince(topic, n)
		now := time.Now()
		for _, m := range msgs {
			if seq, err := strconv.ParseInt(m.Properties[seqHeader], 10, 64); err == nil {
				tr.seen(seq, now, time.UnixMilli(m.BornTimestamp))
			}
		}
		n += len(msgs)
		if len(msgs) > 0 {
			continue
		}
		select {
		case <-more:
		case <-ctx.Done():
			return
		}
	}
}
