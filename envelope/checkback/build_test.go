package checkback

import (
	"errors"
	"testing"
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
