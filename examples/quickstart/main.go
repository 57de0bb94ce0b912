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
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *broker, *checkback); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, broker, checkbackAddr string) error {
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
		return fmt.Errorf("transact: %w", err)
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
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("message not forwarded within 30s: %w", ctx.Err())
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
