package checkback

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want Endpoint
	}{
		{"http://10.0.0.1:8080/check", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "10.0.0.1:8080", Path: "/check"}},
		{"HTTPS://Example.COM", Endpoint{Protocol: ProtoHTTP, Scheme: "https", TLS: true, Host: "example.com:443", Path: "/"}},
		{"http://h/cb?x=1", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "h:80", Path: "/cb"}},
		{"tri://svc:50052/com.example.TxChecker/verifyMessage?version=1.0.0&group=order&bizid=int",
			Endpoint{Protocol: ProtoTriple, Scheme: "tri", Host: "svc:50052", Path: "/com.example.TxChecker/verifyMessage",
				Interface: "com.example.TxChecker", Method: "verifyMessage", Version: "1.0.0", Group: "order", BizID: BizIDInt}},
		{"tris://svc/a.B/m", Endpoint{Protocol: ProtoTriple, Scheme: "tris", TLS: true, Host: "svc:50051", Path: "/a.B/m", Interface: "a.B", Method: "m"}},
		{"jsonrpc://svc:8080/com.example.TxChecker?method=VerifyMessage&bizid=string",
			Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpc", Host: "svc:8080", Path: "/com.example.TxChecker", Method: "VerifyMessage", BizID: BizIDString}},
		{"jsonrpcs://svc/x", Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpcs", TLS: true, Host: "svc:443", Path: "/x", Method: "verifyMessage"}},
		{"http://[::1]:9/x", Endpoint{Protocol: ProtoHTTP, Scheme: "http", Host: "[::1]:9", Path: "/x"}},
		{"Tri://svc/a.B/m", Endpoint{Protocol: ProtoTriple, Scheme: "tri", Host: "svc:50051", Path: "/a.B/m", Interface: "a.B", Method: "m"}},
		{"JSONRPC://svc/x", Endpoint{Protocol: ProtoJSONRPC, Scheme: "jsonrpc", Host: "svc:80", Path: "/x", Method: "verifyMessage"}},
		{"zookeeper://ZK1/com.example.TxChecker", Endpoint{Protocol: ProtoRegistry, Scheme: "zookeeper", Host: "zk1:2181", Path: "/com.example.TxChecker",
			Interface: "com.example.TxChecker", Method: "verifyMessage", Registry: []string{"zk1:2181"}}},
		{"zookeeper://zk1:2182/com.example.TxChecker?version=1.0.0&group=order&protocol=jsonrpc&method=check&bizid=string&backup=ZK2:2183,zk3,[::1]:7",
			Endpoint{Protocol: ProtoRegistry, Scheme: "zookeeper", Host: "zk1:2182", Path: "/com.example.TxChecker", Interface: "com.example.TxChecker",
				Method: "check", Version: "1.0.0", Group: "order", BizID: BizIDString, Via: ProtoJSONRPC,
				Registry: []string{"zk1:2182", "zk2:2183", "zk3:2181", "[::1]:7"}}},
		{"zookeeper://zk1/a.B?protocol=tri", Endpoint{Protocol: ProtoRegistry, Scheme: "zookeeper", Host: "zk1:2181", Path: "/a.B",
			Interface: "a.B", Method: "verifyMessage", Via: ProtoTriple, Registry: []string{"zk1:2181"}}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEndpoint(tc.raw)
			require.NoError(t, err)
			got.Query = nil
			tc.want.Raw = tc.raw
			require.Equal(t, tc.want, got)
		})
	}
	got, err := ParseEndpoint("http://h/cb?x=1&y=2")
	require.NoError(t, err)
	require.Equal(t, "1", got.Query.Get("x"))
}

func TestParseEndpointErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, msg string }{
		{"", "empty"},
		{"ftp://h/x", `unsupported scheme "ftp"`},
		{"h:8080/x", "no scheme"},
		{"/just/a/path", "no scheme"},
		{"dubbo://registry:2181/com.example.TxChecker", "registry addresses are not supported"},
		{"nacos://registry:8848/com.example.TxChecker", "nacos registry addresses are not supported (only zookeeper://)"},
		{"zookeeper://zk:2181", "want zookeeper://host:port/<interface>"},
		{"zookeeper://zk:2181/a/b", "want zookeeper://host:port/<interface>"},
		{"zookeeper:///a.B", "no host"},
		{"zookeeper://zk/a.B?protocol=dubbo", `protocol="dubbo" (want tri or jsonrpc`},
		{"zookeeper://zk/a.B?bizid=long", `bizid="long"`},
		{"zookeeper://zk/a.B?backup=zk2:x", `backup="zk2:x"`},
		{"zookeeper://zk/a.B?backup=zk2,,zk3", `backup=`},
		{"zookeeper://zk/a.B?method=a%2Fb", "a method cannot contain '/'"},
		{"zookeeper://user:pw@zk/a.B", "credentials"},
		{"tri:///com.example.TxChecker/verifyMessage", "no host"},
		{"tri://svc:1/com.example.TxChecker", "want tri://host:port/<interface>/<method>"},
		{"tri://svc:1/a/b/c", "want tri://host:port/<interface>/<method>"},
		{"tri://svc:1/a/b?bizid=long", `bizid="long"`},
		{"jsonrpc://svc:1", "want jsonrpc://host:port/<service path>"},
		{"http://h:/x", "empty port"},
		{"jsonrpcs://svc/", "want jsonrpcs://host:port/<service path>"},
		{"http://[fe80::1%25eth0]/x", "bad host or port"},
		{"tri://svc/a/%2e%2E", "dot segments"},
		{"http://h/a/../admin", "dot segments"},
		{"http://user:pw@h:1/%zz", "credentials"},
		{"http://user:pw@h:1/x", "credentials"},
		{"http:opaque", "no scheme"},
		{"http://h/x#frag", "fragment"},
		{"http://h/a b", "unescaped byte"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEndpoint(tc.raw)
			require.ErrorIs(t, err, ErrBadEndpoint)
			require.ErrorContains(t, err, tc.msg)
			require.NotContains(t, err.Error(), "pw")
		})
	}
}

// The grammar does not allocate for a valid endpoint: envelope validation
// runs it on every PREPARE.
func TestCheckEndpointDoesNotAllocate(t *testing.T) {
	for _, raw := range []string{
		"http://order-svc.prod.svc.cluster.local:8080/eventcenter/check?x=1&y=%2F",
		"tri://h:50051/com.shop.Verify/verifyMessage?version=1.0.0&group=g&bizid=int",
		"JSONRPCS://[::1]:8443/rpc?method=VerifyMessage&bizid=string",
	} {
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = CheckEndpoint(raw) }), raw)
	}
}

// Whatever CheckEndpoint accepts, ParseEndpoint and net/url parse, and
// ParseEndpoint refuses exactly what CheckEndpoint refuses.
func FuzzEndpoint(f *testing.F) {
	for _, s := range []string{
		"http://h", "https://h:443/a?b=c", "http://[::1]:8080/x", "tri://h:1/a.B/m?version=1&bizid=int",
		"jsonrpc://h/p?method=m", "TRIS://h/a.B/m", "http://h/a/../b", "http://u@h/", "tri://h/a/b?bizid=%69nt",
		"http://h:99999/", "jsonrpc://h/p?bizid=x;y", "ftp://h", "http://h/%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkErr := CheckEndpoint(s)
		e, parseErr := ParseEndpoint(s)
		if (checkErr == nil) != (parseErr == nil) {
			t.Fatalf("CheckEndpoint %v, ParseEndpoint %v", checkErr, parseErr)
		}
		if checkErr != nil {
			require.ErrorIs(t, checkErr, ErrBadEndpoint)
			return
		}
		if _, err := url.Parse(s); err != nil {
			t.Fatalf("accepted endpoint does not parse: %v", err)
		}
		if e.Protocol == 0 || e.Host == "" || e.Path == "" {
			t.Fatalf("incomplete endpoint %#v", e)
		}
		if e.Protocol == ProtoTriple && (e.Interface == "" || e.Method == "") {
			t.Fatalf("Triple endpoint without interface or method: %#v", e)
		}
	})
}

func TestDefaultPort(t *testing.T) {
	t.Parallel()
	for scheme, want := range map[string]string{"http": "80", "https": "443", "tri": "50051", "tris": "50051", "jsonrpc": "80", "jsonrpcs": "443"} {
		got, ok := DefaultPort(scheme)
		require.True(t, ok, scheme)
		require.Equal(t, want, got, scheme)
	}
	_, ok := DefaultPort("ftp")
	require.False(t, ok)
}

func TestEndpointURL(t *testing.T) {
	t.Parallel()
	e, err := ParseEndpoint("tris://Svc:9/a.B/m%20x?version=1")
	require.NoError(t, err)
	require.Equal(t, "https://svc:9/a.B/m%20x", e.URL().String())
	require.Equal(t, "tris://svc:9", e.Origin())
	require.Equal(t, "/a.B/m x", e.PathUnescaped())
	require.Equal(t, "triple", e.Protocol.String())
	require.Equal(t, "none", Protocol(0).String())
}

// A path segment some common server reads as a dot segment is refused,
// however it is spelled: with ;parameters (Tomcat, Jetty and Spring drop
// them: "..;" is ".."), escaped twice or more, cut by an escaped NUL, or
// as overlong UTF-8; so is a slash or backslash escaped twice. Segments
// that merely hold ';', '%' or dots among other characters stay valid.
func TestDotSegmentSpellingsRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"/cb/..;/admin", "/cb/..;x=1/admin", "/cb/..%3b/admin", "/cb/..%3B/admin", "/cb/.;/x",
		"/cb/%252e%252e/admin", "/cb/%25252e./admin", "/cb/..%00/admin", "/cb/%c0%ae%c0%ae/admin",
		"/cb/%252fadmin", "/cb/a%255cb", "/cb/%2525252525252e",
	} {
		err := CheckEndpoint("http://127.0.0.1:8090" + p)
		require.ErrorIs(t, err, ErrBadEndpoint, p)
		_, err = ParseEndpoint("jsonrpc://127.0.0.1:8090" + p)
		require.ErrorIs(t, err, ErrBadEndpoint, p)
	}
	for _, p := range []string{"/cb/check;jsessionid=1", "/cb/a..b", "/cb/...", "/cb/100%25", "/cb/a%3bb", "/cb/%2e%2e.x", "/cb/v1.2"} {
		require.NoError(t, CheckEndpoint("http://127.0.0.1:8090"+p), p)
	}
	np, ok := NormalPath("/c%62;v=1/a%2520b/")
	require.True(t, ok)
	require.Equal(t, "/cb/a b", np)
	_, ok = NormalPath("/cb/..;/admin")
	require.False(t, ok)
}
