package checkback

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildTripleRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   Triple
		want string
	}{
		{Triple{Host: "h:1", Interface: "com.x.Check"}, "tri://h:1/com.x.Check/verifyMessage"},
		{Triple{TLS: true, Host: "h:1", Interface: "I", Method: "m", Version: "1.0", Group: "g a", BizID: BizIDInt},
			"tris://h:1/I/m?bizid=int&group=g+a&version=1.0"},
		{Triple{Host: "h", Interface: "I", BizID: BizIDString}, "tri://h/I/verifyMessage?bizid=string"},
	} {
		got, err := BuildTriple(tc.in)
		if err != nil || got != tc.want {
			t.Fatalf("BuildTriple(%+v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		e, err := ParseEndpoint(got)
		if err != nil {
			t.Fatalf("ParseEndpoint(%q): %v", got, err)
		}
		method := tc.in.Method
		if method == "" {
			method = DefaultMethod
		}
		if e.Protocol != ProtoTriple || e.TLS != tc.in.TLS || e.Interface != tc.in.Interface || e.Method != method ||
			e.Version != tc.in.Version || e.Group != tc.in.Group || e.BizID != tc.in.BizID {
			t.Fatalf("ParseEndpoint(%q) = %+v, does not read back %+v", got, e, tc.in)
		}
	}
}

func TestBuildTripleRefuses(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]Triple{
		"no interface":     {Host: "h:1"},
		"slash in iface":   {Host: "h:1", Interface: "a/b"},
		"slash in method":  {Host: "h:1", Interface: "a", Method: "m/n"},
		"no host":          {Interface: "I"},
		"credentials":      {Host: "u:p@h:1", Interface: "I"},
		"bad port":         {Host: "h:123456", Interface: "I"},
		"registry address": {Host: "h:1/x", Interface: "I"},
	} {
		_, err := BuildTriple(in)
		var ee *EndpointError
		if !errors.As(err, &ee) || !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("%s: BuildTriple(%+v) = %v, want an *EndpointError", name, in, err)
		}
	}
}

func TestRegistryProvider(t *testing.T) {
	t.Parallel()
	reg, err := ParseEndpoint("zookeeper://zk:2181/com.example.TxChecker?version=1.0.0&group=order&bizid=int")
	require.NoError(t, err)
	tri, err := reg.Provider(ProtoTriple, "10.0.0.1:50051", "/com.example.TxChecker")
	require.NoError(t, err)
	require.Equal(t, "tri://10.0.0.1:50051/com.example.TxChecker/verifyMessage?bizid=int&group=order&version=1.0.0", tri.Raw)
	require.Equal(t, ProtoTriple, tri.Protocol)
	require.Equal(t, "1.0.0", tri.Version)
	require.Equal(t, "order", tri.Group)
	require.Equal(t, BizIDInt, tri.BizID)

	rpc, err := reg.Provider(ProtoJSONRPC, "10.0.0.2:8080", "")
	require.NoError(t, err)
	require.Equal(t, "jsonrpc://10.0.0.2:8080/com.example.TxChecker?bizid=int", rpc.Raw)
	require.Equal(t, "verifyMessage", rpc.Method)

	reg, err = ParseEndpoint("zookeeper://zk/a.B?method=check")
	require.NoError(t, err)
	rpc, err = reg.Provider(ProtoJSONRPC, "h:1", "/svc/path")
	require.NoError(t, err)
	require.Equal(t, "jsonrpc://h:1/svc/path?method=check", rpc.Raw)

	_, err = reg.Provider(ProtoHTTP, "h:1", "/x")
	require.ErrorIs(t, err, ErrBadEndpoint)
	_, err = reg.Provider(ProtoTriple, "h:1/../x", "")
	require.ErrorIs(t, err, ErrBadEndpoint)
}
