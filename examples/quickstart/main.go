// Command quickstart sends one transactional message through a running
// center (`eventcenter dev`) and reads the forwarded message back.
//
//	go run ./cmd/eventcenter dev          # terminal 1
//	go run ./examples/quickstart          # terminal 2
//
// It also serves a check-back endpoint on 127.0.0.1:8090 (which
// `eventcenter dev` allows), so a message whose COMMIT is lost is settled
// by the center asking this program.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:9092", "Kafka broker of the center")
	checkback := flag.String("checkback", "127.0.0.1:8090", "address of this program's check-back endpoint")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long (no broker, or no center forwarding)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *broker, *checkback, *timeout); err != nil {
		log.Fatal(err)
	}
}

// hint ends every error that a center not running would explain.
const hint = "is `eventcenter dev` running?"

// brokerWait bounds the first contact with the broker, within the timeout.
const brokerWait = 5 * time.Second

func run(ctx context.Context, broker, checkbackAddr string, timeout time.Duration) error {
	// Everything, from the first contact to the forwarded message, within
	// the timeout: without a broker the producer would retry forever.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pingBroker(ctx, broker); err != nil {
		return err
	}

	// The producer's own record of what its local transactions decided.
	committed := map[string]bool{}

	// 1. The check-back endpoint: the center asks it about stale prepares.
	handler := clientlib.NewCheckbackHandler(func(_ context.Context, bizID, key string) (clientlib.Decision, error) {
		if committed[key] {
			return clientlib.DecisionCommit, nil
		}
		return clientlib.DecisionRollback, nil
	})
	l, err := net.Listen("tcp", checkbackAddr)
	if err != nil {
		return fmt.Errorf("check-back listener: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()

	// 2. A transactional message: PREPARE, local transaction, COMMIT.
	p, err := clientlib.NewProducer(
		clientlib.WithBrokers(broker),
		clientlib.WithDefaultVerify("http://"+checkbackAddr+"/checkback"),
	)
	if err != nil {
		return err
	}
	defer p.Close()
	key := fmt.Sprintf("order-%d", time.Now().UnixNano())
	msg := clientlib.Message{
		BizID:        "orders",
		Key:          key,
		Payload:      []byte(`{"order":"` + key + `","amount":42}`),
		ForwardTopic: "orders.events",
		ForwardKey:   key,
		Headers:      []clientlib.Header{{Key: "source", Value: []byte("quickstart")}},
	}
	err = p.Transact(ctx, msg, func(ctx context.Context) error {
		// Your database transaction goes here.
		committed[key] = true
		return nil
	})
	if err != nil && !errors.Is(err, clientlib.ErrCommitUnsent) {
		return fmt.Errorf("transact: %w (%s)", err, hint)
	}
	fmt.Printf("sent %s (PREPARE, local transaction, COMMIT)\n", msg.ID())

	// 3. Read the business topic until the message arrives.
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("orders.events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	dedup := clientlib.NewDeduper(10000)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("message not forwarded within %s: %w (%s)", timeout, ctx.Err(), hint)
		}
		for _, r := range fs.Records() {
			id, _ := clientlib.RecordID(r)
			if dedup.Seen(id) || id != msg.ID() {
				continue
			}
			fmt.Printf("forwarded to %s: key=%s value=%s\n", r.Topic, r.Key, r.Value)
			for _, h := range r.Headers {
				fmt.Printf("  header %s=%s\n", h.Key, h.Value)
			}
			return nil
		}
	}
}

// pingBroker checks that a Kafka broker answers at broker, so that a
// missing center is reported at once rather than as a producer retrying.
func pingBroker(ctx context.Context, broker string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		return fmt.Errorf("broker %s: %w", broker, err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, brokerWait)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		return fmt.Errorf("no Kafka broker answers at %s: %w (%s)", broker, err, hint)
	}
	return nil
}
