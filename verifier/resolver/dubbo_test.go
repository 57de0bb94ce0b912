package resolver

import (
	"math/rand/v2"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// node is a provider URL as Dubbo names its node: URL-encoded.
func node(u string) string { return url.QueryEscape(u) }

func mustEP(t *testing.T, raw string) checkback.Endpoint {
	t.Helper()
	ep, err := checkback.ParseEndpoint(raw)
	require.NoError(t, err)
	return ep
}

func parseAll(nodes ...string) []providerURL {
	var out []providerURL
	for _, n := range nodes {
		out = append(out, parseProvider(n))
	}
	return out
}

func TestParseProvider(t *testing.T) {
	t.Parallel()
	p := parseProvider(node("tri://10.0.0.1:50051/com.shop.Verify?anyhost=true&application=shop&interface=com.shop.Verify&methods=verifyMessage&version=1.0.0&group=order&weight=200&serialization=hessian2&side=provider"))
	require.Empty(t, p.parseFail)
	require.Equal(t, "tri", p.protocol)
	require.Equal(t, "10.0.0.1:50051", p.host)
	require.Equal(t, "com.shop.Verify", p.iface)
	require.Equal(t, "1.0.0", p.version)
	require.Equal(t, "order", p.group)
	require.Equal(t, 200, p.weight)

	p = parseProvider(node("jsonrpc://10.0.0.2:8080/ctx/com.shop.Verify?interface=com.shop.Verify"))
	require.Equal(t, "/ctx/com.shop.Verify", p.path)
	require.Equal(t, DefaultWeight, p.weight)

	require.NotEmpty(t, parseProvider("%zz").parseFail)
	require.NotEmpty(t, parseProvider(node("not a url")).parseFail)
	require.NotEmpty(t, parseProvider(node("tri://h:1/a.B?weight=x")).parseFail)
	require.True(t, parseProvider(node("tri://h:1/a.B?enabled=false")).disabled)
}

func TestSelectProviders(t *testing.T) {
	t.Parallel()
	list := parseAll(
		node("tri://10.0.0.1:50051/com.shop.Verify?interface=com.shop.Verify&version=1.0.0&group=order&weight=200"),
		node("jsonrpc://10.0.0.2:8080/com.shop.Verify?interface=com.shop.Verify&version=1.0.0&group=order"),
		node("tri://10.0.0.3:50051/com.shop.Verify?interface=com.shop.Verify&version=2.0.0&group=order"),
		node("tri://10.0.0.4:50051/com.shop.Verify?interface=com.shop.Verify&version=1.0.0"),
		node("dubbo://10.0.0.5:20880/com.shop.Verify?interface=com.shop.Verify&version=1.0.0&group=order"),
		node("tri://10.0.0.6:50051/com.shop.Other?interface=com.shop.Other&version=1.0.0&group=order"),
		node("tri://10.0.0.7:50051/com.shop.Verify?interface=com.shop.Verify&version=1.0.0&group=order&enabled=false"),
	)
	got, err := selectProviders(mustEP(t, "zookeeper://zk:2181/com.shop.Verify?version=1.0.0&group=order&bizid=int"), "zk:2181", list)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "tri://10.0.0.1:50051/com.shop.Verify/verifyMessage?bizid=int&group=order&version=1.0.0", got[0].Endpoint.Raw)
	require.Equal(t, 200, got[0].Weight)
	require.Equal(t, "jsonrpc://10.0.0.2:8080/com.shop.Verify?bizid=int", got[1].Endpoint.Raw)

	got, err = selectProviders(mustEP(t, "zookeeper://zk:2181/com.shop.Verify?version=1.0.0&group=order&protocol=jsonrpc"), "zk:2181", list)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, checkback.ProtoJSONRPC, got[0].Endpoint.Protocol)

	got, err = selectProviders(mustEP(t, "zookeeper://zk:2181/com.shop.Verify?version=*&group=*"), "zk:2181", list)
	require.NoError(t, err)
	require.Len(t, got, 4, "every version and group but the dubbo and disabled ones")

	for _, tc := range []struct{ ep, want string }{
		{"zookeeper://zk:2181/com.shop.Verify?version=3.0.0", `no provider of com.shop.Verify (version "3.0.0", group "") in registry zookeeper://zk:2181: the registry lists only version "1.0.0" group ""`},
		{"zookeeper://zk:2181/com.shop.Missing", `no provider of com.shop.Missing (version "", group "") in registry zookeeper://zk:2181`},
	} {
		_, err := selectProviders(mustEP(t, tc.ep), "zk:2181", list)
		require.ErrorIs(t, err, ErrNoProvider)
		require.Contains(t, err.Error(), tc.want)
	}

	// Only dubbo (hessian2) providers: say what to enable.
	_, err = selectProviders(mustEP(t, "zookeeper://zk:2181/com.shop.Verify?version=1.0.0&group=order"), "zk:2181",
		parseAll(node("dubbo://10.0.0.5:20880/com.shop.Verify?interface=com.shop.Verify&version=1.0.0&group=order")))
	require.ErrorIs(t, err, ErrNoProvider)
	require.Contains(t, err.Error(), "speak only dubbo: export the service with protocol tri")
	var npe *NoProviderError
	require.ErrorAs(t, err, &npe)
	require.Equal(t, "com.shop.Verify", npe.Service)
	require.Equal(t, "zk:2181", npe.Registry)

	_, err = selectProviders(mustEP(t, "zookeeper://zk:2181/com.shop.Verify?protocol=jsonrpc"), "zk:2181",
		parseAll(node("tri://10.0.0.4:50051/com.shop.Verify?interface=com.shop.Verify")))
	require.ErrorContains(t, err, "speak only tri, and the endpoint asks protocol=jsonrpc")
}

func TestOrderFollowsWeights(t *testing.T) {
	t.Parallel()
	a := Provider{Endpoint: checkback.Endpoint{Host: "a:1"}, Weight: 300}
	b := Provider{Endpoint: checkback.Endpoint{Host: "b:1"}, Weight: 100}
	c := Provider{Endpoint: checkback.Endpoint{Host: "c:1"}, Weight: 0}
	r := rand.New(rand.NewPCG(1, 2))
	first := map[string]int{}
	const n = 20000
	for range n {
		o := Order([]Provider{a, b, c}, r.Float64)
		require.Len(t, o, 3)
		first[o[0].Endpoint.Host]++
	}
	// Weights 300, 100 and (at least) 1.
	require.InDelta(t, 300.0/401, float64(first["a:1"])/n, 0.02, "%v", first)
	require.InDelta(t, 100.0/401, float64(first["b:1"])/n, 0.02, "%v", first)
	require.Equal(t, []Provider{a}, Order([]Provider{a}, r.Float64))
}

// Weight 0, which dubbo-go registers unless told a weight: such providers
// are called only when none has a weight, then with equal weights.
func TestSelectProvidersWeightZero(t *testing.T) {
	t.Parallel()
	ep := mustEP(t, "zookeeper://zk:2181/com.shop.Verify")
	got, err := selectProviders(ep, "zk:2181", parseAll(
		node("jsonrpc://10.0.0.1:8080/com.shop.Verify?interface=com.shop.Verify&weight=0"),
		node("jsonrpc://10.0.0.2:8080/com.shop.Verify?interface=com.shop.Verify&weight=0"),
	))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []int{1, 1}, []int{got[0].Weight, got[1].Weight})

	got, err = selectProviders(ep, "zk:2181", parseAll(
		node("jsonrpc://10.0.0.1:8080/com.shop.Verify?interface=com.shop.Verify&weight=0"),
		node("jsonrpc://10.0.0.2:8080/com.shop.Verify?interface=com.shop.Verify&weight=5"),
	))
	require.NoError(t, err)
	require.Len(t, got, 1, "weight 0 beside a weighted provider is not called")
	require.Equal(t, "10.0.0.2:8080", got[0].Endpoint.Host)
	require.Equal(t, 5, got[0].Weight)
}
