package envelope_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

func compat(value string) envelope.Record {
	return envelope.Record{Topic: "control", Partition: 3, Offset: 42, Key: []byte("anything"), Value: []byte(value)}
}

func TestDecodeCompat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		json string
		want envelope.Envelope
	}{
		{"prepare http", `{"message":"{\"id\":1}","bizID":1001,"messageKey":"order-42","messageStatus":1,
			"forwardTopic":"orders","forwardKey":"42","verifyInfo":{"protocolType":1,"url":"http://svc:8080/verify"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "1001", MessageKey: "order-42", Payload: []byte(`{"id":1}`),
				ForwardTopic: "orders", ForwardKey: "42", Verify: "http://svc:8080/verify", Format: envelope.Compat}},
		{"string bizID, no verify", `{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":null}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t", Format: envelope.Compat}},
		{"empty verifyInfo, empty message", `{"message":"","bizID":7,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":0}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "7", MessageKey: "k", ForwardTopic: "t", Format: envelope.Compat}},
		{"dubbo direct address", `{"message":"m","bizID":1001,"messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"interface":"com.shop.Verify","method":"check","version":"1.0.0","group":"order","address":"10.0.0.5:50051","registryAddress":"zookeeper://zk:2181"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "1001", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "tri://10.0.0.5:50051/com.shop.Verify/check?bizid=int&group=order&version=1.0.0", Format: envelope.Compat}},
		{"dubbo url is interface, default method, string biz", `{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"url":"com.shop.Verify","address":"h:1"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "tri://h:1/com.shop.Verify/verifyMessage", Format: envelope.Compat}},
		{"dubbo url with address", `{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"url":"dubbo://h:20880/com.shop.Verify?version=2.0"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "tri://h:20880/com.shop.Verify/verifyMessage?version=2.0", Format: envelope.Compat}},
		{"dubbo tris url", `{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"url":"tris://h:443/com.shop.Verify/verify"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "tris://h:443/com.shop.Verify/verify", Format: envelope.Compat}},
		{"dubbo through a zookeeper registry", `{"message":"m","bizID":1001,"messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"registryProtocol":"zookeeper","registryAddress":"zk1:2181,zk2:2182","url":"com.shop.Verify","version":"1.0","group":"order"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "1001", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "zookeeper://zk1:2181/com.shop.Verify?backup=zk2%3A2182&bizid=int&group=order&version=1.0", Format: envelope.Compat}},
		{"dubbo registry address as Dubbo spells it", `{"message":"m","bizID":"shop","messageKey":"k","messageStatus":1,"forwardTopic":"t",
			"verifyInfo":{"protocolType":2,"registryAddress":"zookeeper://zk:2181?backup=zk2:2181","url":"com.shop.Verify","method":"check"}}`,
			envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", Payload: []byte("m"), ForwardTopic: "t",
				Verify: "zookeeper://zk:2181/com.shop.Verify?backup=zk2%3A2181&method=check", Format: envelope.Compat}},
		{"commit ignores the rest", `{"message":"m","bizID":1001,"messageKey":"k","messageStatus":2,"forwardTopic":"not/checked","verifyInfo":{"protocolType":2}}`,
			envelope.Envelope{Type: envelope.Commit, BizID: "1001", MessageKey: "k", Format: envelope.Compat}},
		{"rollback", ` {"bizID":-5,"messageKey":"k","messageStatus":3,"unknownField":true}`,
			envelope.Envelope{Type: envelope.Rollback, BizID: "-5", MessageKey: "k", Format: envelope.Compat}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := envelope.Decoder{}.Decode(compat(tc.json))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			// Re-encoded natively, it decodes to itself.
			r, err := envelope.Encode(got)
			require.NoError(t, err)
			again, err := envelope.Decoder{}.Decode(r)
			require.NoError(t, err)
			got.Format = envelope.Native
			require.Equal(t, got, again)
		})
	}
}

func TestDecodeCompatErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		json   string
		dec    envelope.Decoder
		field  string
		reason string
		err    error
	}{
		{"syntax", `{"bizID":1,`, envelope.Decoder{}, "value", "MiddlewareMessage JSON", envelope.ErrInvalid},
		{"array", `[1,2]`, envelope.Decoder{}, "ec-type", "not a MiddlewareMessage", envelope.ErrInvalid},
		{"status type", `{"bizID":1,"messageKey":"k","messageStatus":"2"}`, envelope.Decoder{}, "messageStatus", "want a JSON int", envelope.ErrInvalid},
		{"message not string", `{"message":{"a":1},"bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t"}`, envelope.Decoder{}, "message", "want a JSON string", envelope.ErrInvalid},
		{"status missing", `{"bizID":1,"messageKey":"k"}`, envelope.Decoder{}, "messageStatus", "missing", envelope.ErrUnknownType},
		{"status 4", `{"bizID":1,"messageKey":"k","messageStatus":4}`, envelope.Decoder{}, "messageStatus", "4 is not", envelope.ErrUnknownType},
		{"biz missing", `{"messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "required", envelope.ErrInvalid},
		{"biz null", `{"bizID":null,"messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "required", envelope.ErrInvalid},
		{"biz empty string", `{"bizID":"","messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "required", envelope.ErrInvalid},
		{"biz float", `{"bizID":1.5,"messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "neither an integer nor a string", envelope.ErrInvalid},
		{"biz bool", `{"bizID":true,"messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "neither an integer nor a string", envelope.ErrInvalid},
		{"biz colon", `{"bizID":"a:b","messageKey":"k","messageStatus":2}`, envelope.Decoder{}, "bizID", "contains ':'", envelope.ErrInvalid},
		{"key missing", `{"bizID":1,"messageStatus":2}`, envelope.Decoder{}, "messageKey", "required", envelope.ErrInvalid},
		{"topic missing", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1}`, envelope.Decoder{}, "forwardTopic", "required", envelope.ErrInvalid},
		{"too large", `{"message":"12345","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t"}`, envelope.Decoder{MaxPayload: 4}, "message", "exceeds the limit of 4", envelope.ErrTooLarge},
		{"json too large", `{"message":"` + string(make([]byte, 70<<10)) + `"}`, envelope.Decoder{MaxPayload: 1}, "value", "exceeds the limit", envelope.ErrTooLarge},
		{"protocol 3", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":3,"url":"x"}}`, envelope.Decoder{}, "verifyInfo.protocolType", "3 is not", envelope.ErrInvalid},
		{"http no url", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":1}}`, envelope.Decoder{}, "verifyInfo.url", "required", envelope.ErrInvalid},
		{"http bad url", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":1,"url":"svc/verify"}}`, envelope.Decoder{}, "verifyInfo.url", "not an http(s) URL", envelope.ErrInvalid},
		{"http url fragment", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":1,"url":"http://h/x#y"}}`, envelope.Decoder{}, "verifyInfo.url", "fragment", envelope.ErrInvalid},
		{"dubbo nacos registry", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"registryProtocol":"nacos","registryAddress":"nacos:8848","url":"com.shop.Verify","version":"1.0"}}`, envelope.Decoder{}, "verifyInfo.registryProtocol", "only zookeeper registries are supported", envelope.ErrInvalid},
		{"dubbo no address at all", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"registryProtocol":"zookeeper","url":"com.shop.Verify"}}`, envelope.Decoder{}, "verifyInfo.address", "neither an address nor a registryAddress", envelope.ErrInvalid},
		{"dubbo bad registry address", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"registryProtocol":"zookeeper","registryAddress":"zk:2181/x","url":"com.shop.Verify"}}`, envelope.Decoder{}, "verifyInfo.registryAddress", "not host:port", envelope.ErrInvalid},
		{"dubbo no interface", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"address":"h:1"}}`, envelope.Decoder{}, "verifyInfo.interface", "required", envelope.ErrInvalid},
		{"dubbo http url", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"url":"http://h:1/x"}}`, envelope.Decoder{}, "verifyInfo.url", "Dubbo endpoint URL", envelope.ErrInvalid},
		{"dubbo bad address", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"url":"a.B","address":"h:1/x"}}`, envelope.Decoder{}, "verifyInfo.address", "not host:port", envelope.ErrInvalid},
		{"dubbo slash in method", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"url":"a.B","method":"x/y","address":"h:1"}}`, envelope.Decoder{}, "verifyInfo.interface", "cannot contain '/'", envelope.ErrInvalid},
		{"dubbo unparsable url", `{"message":"m","bizID":1,"messageKey":"k","messageStatus":1,"forwardTopic":"t","verifyInfo":{"protocolType":2,"url":"tri://h:x:y/a"}}`, envelope.Decoder{}, "verifyInfo.url", "not a URL", envelope.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.dec.Decode(compat(tc.json))
			var de *envelope.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.field, de.Field, de.Reason)
			require.Contains(t, de.Reason, tc.reason)
			require.ErrorIs(t, err, tc.err)
			require.Contains(t, err.Error(), "control/3@42: "+tc.field)
		})
	}
}
