package clientlib_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
)

// printControlRecords reads n records of the control topic and prints their
// wire format.
func printControlRecords(addrs []string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(clientlib.DefaultControlTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for n > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n--
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
			fmt.Printf("key=%s value=%q\n  %s\n", r.Key, r.Value, strings.Join(hs, " "))
		})
	}
}

func ExampleProducer_Transact() {
	// An in-process Kafka; in production, WithBrokers("kafka:9092").
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, clientlib.DefaultControlTopic))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()

	p, err := clientlib.NewProducer(
		clientlib.WithBrokers(cluster.ListenAddrs()...),
		clientlib.WithDefaultVerify("http://order-svc:8080/eventcenter/check"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	msg := clientlib.Message{
		BizID:        "order",
		Key:          "42",
		Payload:      []byte(`{"order":42,"total":"9.90"}`),
		ForwardTopic: "orders.created",
		ForwardKey:   "42",
	}
	err = p.Transact(context.Background(), msg, func(ctx context.Context) error {
		fmt.Println("local transaction: INSERT INTO orders ...; COMMIT")
		return nil
	})
	if errors.Is(err, clientlib.ErrCommitUnsent) {
		fmt.Println("committed locally; the center will check back")
	} else if err != nil {
		fmt.Println(err)
		return
	}
	printControlRecords(cluster.ListenAddrs(), 2)
	// Output:
	// local transaction: INSERT INTO orders ...; COMMIT
	// key=order:42 value="{\"order\":42,\"total\":\"9.90\"}"
	//   ec-type=prepare ec-biz=order ec-key=42 ec-topic=orders.created ec-fkey=42 ec-verify=http://order-svc:8080/eventcenter/check
	// key=order:42 value=""
	//   ec-type=commit ec-biz=order ec-key=42
}

func ExampleProducer_Prepare() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, clientlib.DefaultControlTopic))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(cluster.ListenAddrs()...))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	ctx := context.Background()
	err = p.Prepare(ctx, clientlib.Message{
		BizID:        "payment",
		Key:          "pay-7",
		Payload:      []byte("paid"),
		ForwardTopic: "payments",
		Target:       "rocketmq",
		Tag:          "paid",
		Verify:       "tri://pay-svc:50051/com.shop.PaymentVerify/verifyMessage?version=1.0.0",
		CheckAfter:   30 * time.Second,
		Headers:      []clientlib.Header{{Key: "traceparent", Value: []byte("00-4bf92f-01")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... the local transaction commits ...
	if err := p.Commit(ctx, "payment", "pay-7"); err != nil {
		fmt.Println(err)
		return
	}
	printControlRecords(cluster.ListenAddrs(), 2)
	// Output:
	// key=payment:pay-7 value="paid"
	//   ec-type=prepare ec-biz=payment ec-key=pay-7 ec-topic=payments ec-target=rocketmq ec-tag=paid ec-verify=tri://pay-svc:50051/com.shop.PaymentVerify/verifyMessage?version=1.0.0 ec-check-after=30000 ec-h-traceparent=00-4bf92f-01
	// key=payment:pay-7 value=""
	//   ec-type=commit ec-biz=payment ec-key=pay-7
}

func ExampleDeduper() {
	// The center forwards at least once; each forwarded record carries
	// ec-id = "bizID:messageKey".
	delivered := []*kgo.Record{
		{Value: []byte("order 42 created"), Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte("order:42")}}},
		{Value: []byte("order 43 created"), Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte("order:43")}}},
		{Value: []byte("order 42 created"), Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte("order:42")}}}, // redelivery
	}
	d := clientlib.NewDeduper(100_000, clientlib.WithTTL(time.Hour))
	for _, r := range delivered {
		id, _ := clientlib.RecordID(r)
		if d.SeenRecord(r) {
			fmt.Println("drop duplicate", id)
			continue
		}
		fmt.Println("process", id, string(r.Value))
		// If processing fails: d.Forget(id), so that the redelivery is processed.
	}
	// Output:
	// process order:42 order 42 created
	// process order:43 order 43 created
	// drop duplicate order:42
}
