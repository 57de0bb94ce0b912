package checkback

import (
	"net/url"
	"strings"
)

// Triple describes a Triple endpoint to build: the inverse of what
// ParseEndpoint reads from tri:// and tris:// endpoints.
type Triple struct {
	// TLS selects tris:// (Triple over https) instead of tri://.
	TLS bool
	// Host is host:port (or a host; the scheme's default port applies).
	Host string
	// Interface is the service interface; required.
	Interface string
	// Method defaults to DefaultMethod.
	Method string
	// Version and Group become the version and group parameters.
	Version string
	Group   string
	// BizID is the bizid parameter: none for BizIDAuto.
	BizID BizIDEncoding
}

// String spells t as tri[s]://host:port/<interface>/<method>
// [?bizid=&group=&version=], the method defaulting to DefaultMethod and
// the query parameters in name order and escaped. It does not check the
// result: BuildTriple does, and callers that report their own errors pass
// it to CheckEndpoint.
func (t Triple) String() string {
	scheme := "tri"
	if t.TLS {
		scheme = "tris"
	}
	method := t.Method
	if method == "" {
		method = DefaultMethod
	}
	q := url.Values{}
	if t.Version != "" {
		q.Set("version", t.Version)
	}
	if t.Group != "" {
		q.Set("group", t.Group)
	}
	switch t.BizID {
	case BizIDInt:
		q.Set("bizid", "int")
	case BizIDString:
		q.Set("bizid", "string")
	}
	u := url.URL{Scheme: scheme, Host: t.Host, Path: "/" + t.Interface + "/" + method, RawQuery: q.Encode()}
	return u.String()
}

// BuildTriple returns t.String() after checking it: the interface is
// required, neither it nor the method may contain '/', and ParseEndpoint
// must read the result back. The error is an *EndpointError.
func BuildTriple(t Triple) (string, error) {
	if t.Interface == "" || strings.Contains(t.Interface, "/") || strings.Contains(t.Method, "/") {
		return "", &EndpointError{Endpoint: redact(t.String()), Reason: "a Triple endpoint needs an interface, and neither it nor the method may contain '/'"}
	}
	s := t.String()
	if _, err := ParseEndpoint(s); err != nil {
		return "", err
	}
	return s, nil
}

// Provider returns the direct endpoint of one provider of the registry
// endpoint e (ProtoRegistry): proto is the provider's (ProtoTriple or
// ProtoJSONRPC), host its host:port and path its service path as the
// registry lists it (JSON-RPC calls go there; Triple calls to
// /<interface>/<method>). Method, version, group and bizid come from e. The
// error is an *EndpointError.
func (e Endpoint) Provider(proto Protocol, host, path string) (Endpoint, error) {
	var s string
	switch proto {
	case ProtoTriple:
		s = Triple{Host: host, Interface: e.Interface, Method: e.Method, Version: e.Version, Group: e.Group, BizID: e.BizID}.String()
	case ProtoJSONRPC:
		q := url.Values{}
		if e.Method != DefaultMethod {
			q.Set("method", e.Method)
		}
		switch e.BizID {
		case BizIDInt:
			q.Set("bizid", "int")
		case BizIDString:
			q.Set("bizid", "string")
		}
		if strings.Trim(path, "/") == "" {
			path = e.Interface
		}
		u := url.URL{Scheme: "jsonrpc", Host: host, Path: "/" + strings.TrimPrefix(path, "/"), RawQuery: q.Encode()}
		s = u.String()
	default:
		return Endpoint{}, &EndpointError{Endpoint: host, Reason: "a provider is called over Triple or JSON-RPC, not " + proto.String()}
	}
	return ParseEndpoint(s)
}
