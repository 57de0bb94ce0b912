package verifier

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Protocol is how a check-back endpoint is spoken to.
type Protocol uint8

const (
	// ProtoHTTP is the TrustMessage GET shape (http://, https://).
	ProtoHTTP Protocol = iota + 1
	// ProtoTriple is Dubbo 3 Triple over HTTP/1.1 with JSON (tri://, tris://).
	ProtoTriple
	// ProtoJSONRPC is JSON-RPC 2.0 over HTTP, Dubbo's "http" protocol
	// (jsonrpc://, jsonrpcs://).
	ProtoJSONRPC
)

// String returns the metric label of p: http, triple or jsonrpc.
func (p Protocol) String() string {
	switch p {
	case ProtoHTTP:
		return "http"
	case ProtoTriple:
		return "triple"
	case ProtoJSONRPC:
		return "jsonrpc"
	default:
		return "none"
	}
}

// ErrBadEndpoint is wrapped by every endpoint parse error.
var ErrBadEndpoint = errors.New("bad check-back endpoint")

// Endpoint is a parsed check-back endpoint.
type Endpoint struct {
	Protocol Protocol
	// Scheme is as written: http, https, tri, tris, jsonrpc or jsonrpcs.
	Scheme string
	// TLS tells whether the call goes over https.
	TLS bool
	// Host is host:port, the port filled in with the scheme's default. It
	// is also the key of the per-endpoint concurrency cap and breaker.
	Host string
	// Path is the request path: the URL path for HTTP, "/{interface}/{method}"
	// for Triple, the service path for JSON-RPC.
	Path string
	// Query is the query of an HTTP endpoint, kept on the request.
	Query url.Values
	// Interface and Method: Triple's interface and method; Method is also
	// the JSON-RPC method (default verifyMessage).
	Interface string
	Method    string
	// Version and Group are Triple's tri-service-version/-group headers.
	Version string
	Group   string
	// BizID is how Triple and JSON-RPC calls send the bizID (the bizid
	// query parameter); HTTP calls always send it in the query string.
	BizID BizIDEncoding
	// Raw is the endpoint as written.
	Raw string
}

// BizIDEncoding says how the bizID argument of a Triple or JSON-RPC call
// is written.
type BizIDEncoding uint8

const (
	// BizIDAuto (no bizid parameter) sends a numeric bizID (only digits,
	// no leading zero, fits an int64, so the number reads back as the same
	// bizID) as a JSON number and any other as a string, as the TrustMessage
	// format does for a numeric bizID: Java Integer/Long and dubbo-go
	// providers take the number.
	BizIDAuto BizIDEncoding = iota
	// BizIDInt (bizid=int) sends every bizID that parses as an int64 as a
	// JSON number ("007" as 7), others as a string.
	BizIDInt
	// BizIDString (bizid=string) always sends a JSON string.
	BizIDString
)

// DefaultJSONRPCMethod is the JSON-RPC method when the endpoint names none:
// TrustMessage's verifyMessage.
const DefaultJSONRPCMethod = "verifyMessage"

var defaultPorts = map[string]string{
	"http": "80", "https": "443",
	"tri": "50051", "tris": "50051",
	"jsonrpc": "80", "jsonrpcs": "443",
}

// ParseEndpoint reads a check-back endpoint:
//
//	http://host:port/path[?query]            https://...
//	tri://host:port/<interface>/<method>?version=&group=&bizid=int|string   tris://...
//	jsonrpc://host:port/<path>?method=verifyMessage&bizid=int|string      jsonrpcs://...
//
// The scheme is case-insensitive (HTTP://, Tri://). Without bizid, a bizID
// that is all digits (fitting an int64) is sent as a JSON number
// (BizIDAuto); bizid=string keeps it a string.
//
// An endpoint without a direct host (a registry-only Dubbo address) is an
// error until registry lookup exists.
func ParseEndpoint(raw string) (Endpoint, error) {
	fail := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("%w %q: %s", ErrBadEndpoint, redact(raw), fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(raw) == "" {
		return fail("empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail("%v", unwrapURLError(err))
	}
	e := Endpoint{Scheme: strings.ToLower(u.Scheme), Raw: raw}
	switch e.Scheme {
	case "http", "https":
		e.Protocol = ProtoHTTP
	case "tri", "tris":
		e.Protocol = ProtoTriple
	case "jsonrpc", "jsonrpcs":
		e.Protocol = ProtoJSONRPC
	case "dubbo", "zookeeper", "nacos", "registry":
		return fail("registry addresses are not supported; give the provider's direct tri:// or jsonrpc:// address")
	case "":
		return fail("no scheme (want http, https, tri, tris, jsonrpc or jsonrpcs)")
	default:
		return fail("unsupported scheme %q (want http, https, tri, tris, jsonrpc or jsonrpcs)", u.Scheme)
	}
	e.TLS = e.Scheme == "https" || e.Scheme == "tris" || e.Scheme == "jsonrpcs"
	if u.Opaque != "" {
		return fail("not a hierarchical URL (write %s://host:port/...)", e.Scheme)
	}
	host, err := hostPort(u, e.Scheme)
	if err != nil {
		return fail("%v", err)
	}
	e.Host = host
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return fail("dot segments in the path")
		}
	}
	q := u.Query()
	switch e.Protocol {
	case ProtoHTTP:
		e.Path = u.EscapedPath()
		if e.Path == "" {
			e.Path = "/"
		}
		e.Query = q
	case ProtoTriple:
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return fail("want tri://host:port/<interface>/<method>")
		}
		e.Interface, e.Method = parts[0], parts[1]
		e.Path = "/" + url.PathEscape(e.Interface) + "/" + url.PathEscape(e.Method)
		e.Version, e.Group = q.Get("version"), q.Get("group")
	case ProtoJSONRPC:
		p := strings.Trim(u.Path, "/")
		if p == "" {
			return fail("want jsonrpc://host:port/<service path>")
		}
		e.Path = u.EscapedPath()
		e.Method = q.Get("method")
		if e.Method == "" {
			e.Method = DefaultJSONRPCMethod
		}
	}
	if e.Protocol != ProtoHTTP {
		switch b := q.Get("bizid"); b {
		case "":
		case "int":
			e.BizID = BizIDInt
		case "string":
			e.BizID = BizIDString
		default:
			return fail("bizid=%q (want int or string)", b)
		}
	}
	return e, nil
}

func hostPort(u *url.URL, scheme string) (string, error) {
	h := u.Hostname()
	if h == "" {
		return "", errors.New("no host (a registry-only address is not supported; give the provider's direct address)")
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return "", errors.New("empty port")
		}
		port = defaultPorts[scheme]
	}
	return net.JoinHostPort(strings.ToLower(h), port), nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact removes user information from an endpoint for messages and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		if u.User == nil {
			return raw
		}
		return u.Redacted()
	}
	// Unparsable: cut whatever sits between "//" and an "@" in the authority.
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return raw
	}
	authority, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		return strings.Replace(raw, authority[:i+1], "xxxxx@", 1)
	}
	return raw
}

// Origin returns scheme://host:port with the port filled in.
func (e Endpoint) Origin() string { return e.Scheme + "://" + e.Host }

// String returns the endpoint as written, without a password.
func (e Endpoint) String() string { return redact(e.Raw) }

// requestURL is the http(s) URL the call goes to, without the per-message
// query of the HTTP shape.
func (e Endpoint) requestURL() *url.URL {
	scheme := "http"
	if e.TLS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: e.Host}
	if p, err := url.PathUnescape(e.Path); err == nil {
		u.Path = p
		u.RawPath = e.Path
	} else {
		u.Path = e.Path
	}
	return u
}

// CheckAllowEntry reports whether s is a valid allow-list entry (Config.Allow,
// BizConfig.Allow): an origin such as http://10.0.0.1:8080 or a URL prefix
// such as http://10.0.0.1:8080/cb/. The error says what is wrong with it.
func CheckAllowEntry(s string) error {
	_, err := parseAllowRule(s)
	return err
}

// allowRule is one parsed entry of an allow list.
type allowRule struct {
	scheme string
	host   string
	path   string // "" for an origin rule
}

func parseAllowRule(s string) (allowRule, error) {
	u, err := url.Parse(s)
	if err != nil {
		return allowRule{}, unwrapURLError(err)
	}
	scheme := strings.ToLower(u.Scheme)
	if _, ok := defaultPorts[scheme]; !ok {
		return allowRule{}, fmt.Errorf("scheme %q (want http, https, tri, tris, jsonrpc or jsonrpcs)", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return allowRule{}, errors.New("an allow entry is an origin or a URL prefix: no query, fragment or user")
	}
	host, err := hostPort(u, scheme)
	if err != nil {
		return allowRule{}, err
	}
	p := u.Path
	if p == "/" {
		p = ""
	}
	return allowRule{scheme: scheme, host: host, path: p}, nil
}

// allows tells whether e matches the rule: same scheme, host and port, and
// for a prefix rule, the same path or a path below it (segment-wise, so
// /check does not allow /checkout).
func (r allowRule) allows(e Endpoint) bool {
	if r.scheme != e.Scheme || r.host != e.Host {
		return false
	}
	if r.path == "" {
		return true
	}
	p := "/" + strings.Trim(pathOf(e), "/")
	rp := strings.TrimSuffix(r.path, "/")
	return p == rp || strings.HasPrefix(p, rp+"/")
}

func pathOf(e Endpoint) string {
	if p, err := url.PathUnescape(e.Path); err == nil {
		return p
	}
	return e.Path
}
