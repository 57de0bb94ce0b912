package rocketmq_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// TestACL: against a broker with ACL, a target with the access key and
// secret key sends; a wrong secret key or none is refused with the
// broker's reason and nothing is stored; the secret key never shows in the
// error.
func TestACL(t *testing.T) {
	t.Parallel()
	const secret = "CANARY-rmq-sk-0c4e"
	s := startFake(t, rocketmqfake.WithTopic("orders", 2), rocketmqfake.WithACL("center", secret))
	good := newTarget(t, s, func(c *rocketmq.Config) { c.AccessKey, c.SecretKey = "center", secret })
	res := good.Send(t.Context(), []forwarder.Record{rec("orders", "1")})
	require.NoError(t, res[0].Err)
	require.Len(t, s.Messages("orders"), 1)

	for name, tc := range map[string]struct{ ak, sk, want string }{
		"wrong secret key": {"center", "wrong-" + secret, "Check signature failed for accessKey=center"},
		"unknown key":      {"other", secret, "No acl config for other"},
		"no credentials":   {"", "", "No accessKey is configured"},
	} {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(t, s, func(c *rocketmq.Config) {
				c.AccessKey, c.SecretKey, c.Retries = tc.ak, tc.sk, -1
			})
			res := tg.Send(t.Context(), []forwarder.Record{rec("orders", "2")})
			require.ErrorContains(t, res[0].Err, tc.want)
			require.NotContains(t, res[0].Err.Error(), secret)
		})
	}
	require.Len(t, s.Messages("orders"), 1, "refused sends store nothing")
	require.Equal(t, 3, s.ACLFailures())

	_, err := rocketmq.New(rocketmq.Config{Name: "x", NameServers: []string{s.NameServerAddr()}, AccessKey: "a"})
	require.ErrorContains(t, err, "AccessKey, SecretKey")
}

// TestSignOrder: the fake signs the values of the extension fields in key
// order, Signature excluded, then the body, as the client's ACL hook
// (rocketmq-client-go v2.1.2 internal/remote ACLInterceptor) does; TestACL
// checks it against the real client.
func TestSignOrder(t *testing.T) {
	t.Parallel()
	ext := map[string]string{"AccessKey": "ak", "b": "2", "a": "1"}
	// Sorted keys: AccessKey, a, b → "ak" + "1" + "2" + body.
	require.Equal(t, rocketmqfake.Sign(map[string]string{"x": "ak12"}, []byte("body"), "sk"), rocketmqfake.Sign(ext, []byte("body"), "sk"))
	ext["Signature"] = "ignored"
	require.Equal(t, rocketmqfake.Sign(map[string]string{"x": "ak12"}, []byte("body"), "sk"), rocketmqfake.Sign(ext, []byte("body"), "sk"))
}
