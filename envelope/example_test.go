package envelope_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
)

func ExampleEncode() {
	r, err := envelope.Encode(envelope.Envelope{
		Type:         envelope.Prepare,
		BizID:        "order",
		MessageKey:   "42",
		Payload:      []byte(`{"order":42}`),
		ForwardTopic: "orders.created",
		Verify:       "http://order-svc:8080/eventcenter/check",
		CheckAfter:   10 * time.Second,
		Headers:      []envelope.Header{{Key: "traceparent", Value: []byte("00-4bf9-01")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("key %s\n", r.Key)
	for _, h := range r.Headers {
		fmt.Printf("%s: %s\n", h.Key, h.Value)
	}
	fmt.Printf("value %s\n", r.Value)
	// Output:
	// key order:42
	// ec-type: prepare
	// ec-biz: order
	// ec-key: 42
	// ec-topic: orders.created
	// ec-verify: http://order-svc:8080/eventcenter/check
	// ec-check-after: 10000
	// ec-h-traceparent: 00-4bf9-01
	// value {"order":42}
}

func ExampleDecoder_Decode() {
	r := envelope.Record{
		Topic: "eventcenter.control", Partition: 0, Offset: 7,
		Key: []byte("order:42"),
		Headers: []envelope.Header{
			{Key: "ec-type", Value: []byte("commit")},
			{Key: "ec-biz", Value: []byte("order")},
			{Key: "ec-key", Value: []byte("42")},
		},
	}
	e, err := envelope.Decoder{}.Decode(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Type, e.ID())
	// Output:
	// commit order:42
}

func ExampleDecoder_Decode_compat() {
	// A TrustMessage producer's MiddlewareMessage: no ec-type header.
	r := envelope.Record{
		Topic: "eventcenter.control", Partition: 1, Offset: 99,
		Value: []byte(`{"message":"{\"order\":42}","bizID":1001,"messageKey":"order-42",
			"messageStatus":1,"forwardTopic":"orders","forwardKey":"42",
			"verifyInfo":{"protocolType":2,"interface":"com.shop.MessageVerify",
				"version":"1.0.0","address":"10.0.0.5:50051"}}`),
	}
	e, err := envelope.Decoder{}.Decode(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Type, e.ID(), e.Format == envelope.Compat)
	fmt.Println(e.ForwardTopic, e.ForwardKey, string(e.Payload))
	fmt.Println(e.Verify)
	// Output:
	// prepare 1001:order-42 true
	// orders 42 {"order":42}
	// tri://10.0.0.5:50051/com.shop.MessageVerify/verifyMessage?bizid=int&version=1.0.0
}

func ExampleDecodeError() {
	r := envelope.Record{
		Topic: "eventcenter.control", Partition: 2, Offset: 1234,
		Key: []byte("order:42"),
		Headers: []envelope.Header{
			{Key: "ec-type", Value: []byte("prepare")},
			{Key: "ec-biz", Value: []byte("order")},
			{Key: "ec-key", Value: []byte("42")},
			{Key: "ec-topic", Value: []byte("orders")},
			{Key: "ec-check-after", Value: []byte("10s")},
		},
	}
	_, err := envelope.Decoder{}.Decode(r)
	fmt.Println(err)
	var de *envelope.DecodeError
	if errors.As(err, &de) {
		fmt.Println(de.Field, errors.Is(err, envelope.ErrInvalid))
	}
	// Output:
	// decode control record eventcenter.control/2@1234: ec-check-after: "10s" is not a non-negative integer number of milliseconds
	// ec-check-after true
}
