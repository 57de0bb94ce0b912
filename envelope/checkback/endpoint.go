package checkback

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
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
	// ProtoRegistry is a Dubbo service found through its registry
	// (zookeeper://): the call goes to one of the providers registered
	// there, in that provider's protocol (Triple or JSON-RPC).
	ProtoRegistry
)

// Protocols lists every protocol, for metrics that want all label values.
var Protocols = [...]Protocol{ProtoHTTP, ProtoTriple, ProtoJSONRPC, ProtoRegistry}

// String returns the metric label of p: http, triple or jsonrpc.
func (p Protocol) String() string {
	switch p {
	case ProtoHTTP:
		return "http"
	case ProtoTriple:
		return "triple"
	case ProtoJSONRPC:
		return "jsonrpc"
	case ProtoRegistry:
		return "registry"
	default:
		return "none"
	}
}

// ErrBadEndpoint is wrapped by every endpoint error (an *EndpointError).
var ErrBadEndpoint = errors.New("bad check-back endpoint")

// EndpointError says why an endpoint was refused.
type EndpointError struct {
	// Endpoint is the endpoint as written, without a password.
	Endpoint string
	// Reason is what is wrong with it.
	Reason string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrBadEndpoint, e.Endpoint, e.Reason)
}

// Unwrap returns ErrBadEndpoint.
func (e *EndpointError) Unwrap() error { return ErrBadEndpoint }

// Endpoint is a parsed check-back endpoint.
type Endpoint struct {
	Protocol Protocol
	// Scheme is lower-cased: http, https, tri, tris, jsonrpc, jsonrpcs or
	// zookeeper.
	Scheme string
	// TLS tells whether the call goes over https.
	TLS bool
	// Host is host:port, lower-cased, the port filled in with the scheme's
	// default. It is also the key of the per-endpoint concurrency cap and
	// breaker.
	Host string
	// Path is the escaped request path: the URL path for HTTP,
	// "/{interface}/{method}" for Triple, the service path for JSON-RPC.
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
	// Registry holds, for a registry endpoint (ProtoRegistry), the
	// registry's servers as host:port: Host first, then the backup
	// parameter's, in order.
	Registry []string
	// Via is, for a registry endpoint, the one provider protocol to call
	// (the protocol parameter: ProtoTriple for tri, ProtoJSONRPC for
	// jsonrpc), or 0 for either.
	Via Protocol
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

// DefaultMethod is the Triple and JSON-RPC method when the endpoint names
// none: TrustMessage's verifyMessage.
const DefaultMethod = "verifyMessage"

// DefaultPort returns the port a scheme (lower case) uses when the
// endpoint names none, and whether the scheme is one an endpoint may have.
func DefaultPort(scheme string) (string, bool) {
	switch scheme {
	case "http", "jsonrpc":
		return "80", true
	case "https", "jsonrpcs":
		return "443", true
	case "tri", "tris":
		return "50051", true
	case "zookeeper":
		return "2181", true
	}
	return "", false
}

// schemes are the schemes an endpoint may have.
var schemes = [...]string{"http", "https", "tri", "tris", "jsonrpc", "jsonrpcs", "zookeeper"}

// registrySchemes are other Dubbo registry addresses, refused with a hint.
var registrySchemes = [...]string{"dubbo", "nacos", "registry"}

// CheckEndpoint reports whether s is a valid check-back endpoint:
//
//	http://host[:port][/path][?query]                               https://...
//	tri://host[:port]/<interface>/<method>[?version=&group=&bizid=int|string]  tris://...
//	jsonrpc://host[:port]/<path>[?method=verifyMessage&bizid=int|string]      jsonrpcs://...
//	zookeeper://host[:port]/<interface>[?version=&group=&protocol=tri|jsonrpc&method=&bizid=&backup=host:port,...]
//
// The scheme is case-insensitive. The host is a name of letters, digits,
// '.', '-', '_' or a bracketed IPv6 address without zone; the port is 1 to
// 5 digits. Path and query are printable ASCII with valid %-escapes; the
// path has no dot segments, plain or %2E-spelled, and no encoded slash or
// backslash (%2F, %5C in any case, or a bare '\', which is sent as %5C),
// so that no server decoding it can route it outside the path it shows
// (the allow list matches that path as written). No credentials, no fragment. bizid, where given, is int or
// string. A zookeeper endpoint names a Dubbo service in a ZooKeeper
// registry (the default port 2181, further servers of the same ensemble
// in backup): the call goes to one of its providers. Other registries
// (nacos://, dubbo://) are refused with the reason.
//
// It does not allocate when s is valid (it runs on every PREPARE); whatever
// it accepts, ParseEndpoint and net/url parse. The error is an
// *EndpointError.
func CheckEndpoint(s string) error {
	if reason := check(s); reason != "" {
		return &EndpointError{Endpoint: redact(s), Reason: reason}
	}
	return nil
}

// check returns what is wrong with s, or "".
func check(s string) string {
	if strings.TrimSpace(s) == "" {
		return "empty"
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "no scheme: scheme must be one of http, https, tri, tris, jsonrpc, jsonrpcs, zookeeper (scheme://host:port/...)"
	}
	lower := ""
	for _, sc := range schemes {
		if strings.EqualFold(scheme, sc) {
			lower = sc
			break
		}
	}
	if lower == "" {
		for _, sc := range registrySchemes {
			if strings.EqualFold(scheme, sc) {
				return strings.ToLower(scheme) + " registry addresses are not supported (only zookeeper://); give zookeeper://host:port/<interface> or the provider's direct tri:// or jsonrpc:// address"
			}
		}
		return "unsupported scheme " + strconv.Quote(scheme) + ": scheme must be one of http, https, tri, tris, jsonrpc, jsonrpcs, zookeeper"
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return "a fragment is not allowed"
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, pathQuery := rest[:end], rest[end:]
	if authority == "" {
		return "no host"
	}
	if strings.IndexByte(authority, '@') >= 0 {
		return "credentials in the URL are not allowed"
	}
	if r := checkHostPort(authority); r != "" {
		return r
	}
	for i := 0; i < len(pathQuery); i++ {
		c := pathQuery[i]
		switch {
		case c <= ' ' || c >= 0x7f:
			return "unescaped byte " + strconv.QuoteRune(rune(c)) + " in path or query"
		case c == '%':
			if i+2 >= len(pathQuery) || !isHex(pathQuery[i+1]) || !isHex(pathQuery[i+2]) {
				return "bad %-escape in path or query"
			}
		}
	}
	path, query, _ := strings.Cut(pathQuery, "?")
	for seg := range strings.SplitSeq(path, "/") {
		if r := segmentProblem(seg); r != "" {
			return r
		}
	}
	if hasEncodedSeparator(path) {
		return "encoded slash or backslash (%2F, %5C) in the path"
	}
	if strings.IndexByte(path, '\\') >= 0 {
		return "backslash in the path (sent as %5C)"
	}
	switch lower {
	case "tri", "tris":
		iface, method, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		if !ok || iface == "" || method == "" || strings.IndexByte(method, '/') >= 0 {
			return "want " + lower + "://host:port/<interface>/<method>"
		}
	case "jsonrpc", "jsonrpcs":
		if strings.Trim(path, "/") == "" {
			return "want " + lower + "://host:port/<service path>"
		}
	case "zookeeper":
		if r := checkRegistry(path, query); r != "" {
			return r
		}
	}
	if lower != "http" && lower != "https" {
		if b, _ := queryParam(query, "bizid"); b != "" && b != "int" && b != "string" {
			return "bizid=" + strconv.Quote(b) + " (want int or string)"
		}
	}
	return ""
}

// checkRegistry checks the path and query of a zookeeper endpoint.
func checkRegistry(path, query string) string {
	iface := strings.TrimPrefix(path, "/")
	if iface == "" || strings.IndexByte(iface, '/') >= 0 {
		return "want zookeeper://host:port/<interface>"
	}
	if p, _ := queryParam(query, "protocol"); p != "" && p != "tri" && p != "jsonrpc" {
		return "protocol=" + strconv.Quote(p) + " (want tri or jsonrpc: the center calls providers over Triple with JSON or JSON-RPC)"
	}
	if m, _ := queryParam(query, "method"); strings.IndexByte(m, '/') >= 0 {
		return "a method cannot contain '/'"
	}
	if b, ok := queryParam(query, "backup"); ok {
		for hp := range strings.SplitSeq(b, ",") {
			if hp == "" || checkHostPort(hp) != "" {
				return "backup=" + strconv.Quote(b) + " (want host:port,host:port)"
			}
		}
	}
	return ""
}

// checkHostPort accepts host, host:port, [ipv6] and [ipv6]:port, where host
// is letters, digits, '.', '-' and '_', and port is 1 to 5 digits.
func checkHostPort(a string) string {
	const bad = "not a URL: bad host or port"
	host, port, hasPort := a, "", false
	if a[0] == '[' {
		i := strings.IndexByte(a, ']')
		if i < 2 {
			return bad
		}
		ip, err := netip.ParseAddr(a[1:i])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad
		}
		host, port = "", a[i+1:]
		if port != "" {
			if port[0] != ':' {
				return bad
			}
			port, hasPort = port[1:], true
		}
	} else if i := strings.IndexByte(a, ':'); i >= 0 {
		host, port, hasPort = a[:i], a[i+1:], true
		if host == "" {
			return bad
		}
	}
	if hasPort && port == "" {
		return bad + " (empty port)"
	}
	if a[0] != '[' {
		for i := 0; i < len(host); i++ {
			c := host[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
				return bad
			}
		}
	}
	if len(port) > 5 {
		return bad
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return bad
		}
	}
	return ""
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hasEncodedSeparator tells whether an escaped path holds %2F or %5C in
// any case: a server that decodes them before routing would see segments
// (and dot segments) the endpoint grammar and the allow list never saw.
func hasEncodedSeparator(path string) bool {
	for i := 0; i+2 < len(path); i++ {
		if path[i] != '%' {
			continue
		}
		hi, lo := path[i+1], path[i+2]|0x20 // lower-case a hex letter
		if hi == '2' && lo == 'f' || hi == '5' && lo == 'c' {
			return true
		}
	}
	return false
}

// maxUnescape bounds how many times a path segment is unescaped to see
// what a server decoding it again and again would read; a segment still
// escaped after that is refused.
const maxUnescape = 4

// segmentProblem says why an escaped path segment could be read by some
// server as something other than the plain segment it shows (a dot
// segment, or two segments), or "". It does not allocate for segments of
// up to 128 bytes.
func segmentProblem(seg string) string {
	const dots = "dot segments in the path (also spelled %2E, escaped twice, or followed by ;parameters)"
	if strings.IndexByte(seg, '%') < 0 && strings.IndexByte(seg, ';') < 0 {
		if isDots(seg) {
			return dots
		}
		return ""
	}
	var buf [128]byte
	b := append(buf[:0], seg...)
	for i := 0; ; i++ {
		d := unescapeOnce(b)
		if len(d) == len(b) {
			break
		}
		if i == maxUnescape {
			return "a path segment escaped more than " + strconv.Itoa(maxUnescape) + " times"
		}
		b = d
	}
	// Servers drop path parameters (";...") from a segment; C code stops
	// at a NUL.
	if i := bytes.IndexAny(b, ";\x00"); i >= 0 {
		b = b[:i]
	}
	if isDots(b) {
		return dots
	}
	if bytes.IndexByte(b, '/') >= 0 || bytes.IndexByte(b, '\\') >= 0 {
		return "encoded slash or backslash (%2F, %5C, also escaped twice) in the path"
	}
	return ""
}

// unescapeOnce decodes every valid %XX of b in place and returns the
// result (b itself when there is none).
func unescapeOnce(b []byte) []byte {
	n := 0
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			b[n] = unhex(b[i+1])<<4 | unhex(b[i+2])
			i += 2
		} else {
			b[n] = b[i]
		}
		n++
	}
	return b[:n]
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// isDots tells whether a decoded segment is "." or "..", a dot also
// spelled as the overlong UTF-8 C0 AE that old servers decoded as '.'.
func isDots[T ~string | ~[]byte](b T) bool {
	dots := 0
	for i := 0; i < len(b); {
		switch {
		case b[i] == '.':
			i++
		case i+1 < len(b) && b[i] == 0xc0 && b[i+1] == 0xae:
			i += 2
		default:
			return false
		}
		dots++
	}
	return dots == 1 || dots == 2
}

// NormalPath is an escaped path as a server decoding it reads it: each
// segment unescaped (repeatedly, as segmentProblem does) and cut at its
// ;parameters, joined by "/". ok is false when a segment has a problem
// (CheckEndpoint refuses such an endpoint): allow rules compare this form,
// so that no spelling of a path matches a rule the path it reaches would
// not.
func NormalPath(escaped string) (normal string, ok bool) {
	var sb strings.Builder
	for seg := range strings.SplitSeq(strings.Trim(escaped, "/"), "/") {
		if segmentProblem(seg) != "" {
			return "", false
		}
		b := []byte(seg)
		for {
			d := unescapeOnce(b)
			if len(d) == len(b) {
				break
			}
			b = d
		}
		if i := bytes.IndexAny(b, ";\x00"); i >= 0 {
			b = b[:i]
		}
		sb.WriteByte('/')
		sb.Write(b)
	}
	return sb.String(), true
}

// queryParam returns the first value of name in a raw query, unescaped,
// reading the pairs as net/url does (a pair with an undecodable escape is
// skipped). It allocates only when the value is escaped.
func queryParam(query, name string) (string, bool) {
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		if strings.Contains(pair, ";") {
			continue // net/url drops these
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != name {
			continue
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			continue
		}
		return v, true
	}
	return "", false
}

// ParseEndpoint reads a check-back endpoint of the grammar CheckEndpoint
// accepts. The error is an *EndpointError.
func ParseEndpoint(raw string) (Endpoint, error) {
	if err := CheckEndpoint(raw); err != nil {
		return Endpoint{}, err
	}
	u, err := url.Parse(raw)
	if err != nil { // CheckEndpoint accepts only what net/url parses
		return Endpoint{}, &EndpointError{Endpoint: redact(raw), Reason: unwrapURLError(err).Error()}
	}
	e := Endpoint{Scheme: strings.ToLower(u.Scheme), Raw: raw}
	switch e.Scheme {
	case "http", "https":
		e.Protocol = ProtoHTTP
	case "tri", "tris":
		e.Protocol = ProtoTriple
	case "zookeeper":
		e.Protocol = ProtoRegistry
	default:
		e.Protocol = ProtoJSONRPC
	}
	e.TLS = e.Scheme == "https" || e.Scheme == "tris" || e.Scheme == "jsonrpcs"
	port := u.Port()
	if port == "" {
		port, _ = DefaultPort(e.Scheme)
	}
	e.Host = net.JoinHostPort(strings.ToLower(u.Hostname()), port)
	param := func(name string) string { v, _ := queryParam(u.RawQuery, name); return v }
	switch e.Protocol {
	case ProtoHTTP:
		e.Path = u.EscapedPath()
		if e.Path == "" {
			e.Path = "/"
		}
		e.Query = u.Query()
	case ProtoTriple:
		e.Interface, e.Method, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		e.Path = "/" + url.PathEscape(e.Interface) + "/" + url.PathEscape(e.Method)
		e.Version, e.Group = param("version"), param("group")
	case ProtoJSONRPC:
		e.Path = u.EscapedPath()
		e.Method = param("method")
		if e.Method == "" {
			e.Method = DefaultMethod
		}
	case ProtoRegistry:
		e.Interface = strings.TrimPrefix(u.Path, "/")
		e.Path = "/" + url.PathEscape(e.Interface)
		e.Method = param("method")
		if e.Method == "" {
			e.Method = DefaultMethod
		}
		e.Version, e.Group = param("version"), param("group")
		switch param("protocol") {
		case "tri":
			e.Via = ProtoTriple
		case "jsonrpc":
			e.Via = ProtoJSONRPC
		}
		e.Registry = []string{e.Host}
		if b := param("backup"); b != "" {
			for hp := range strings.SplitSeq(b, ",") {
				h, p, err := net.SplitHostPort(hp)
				if err != nil {
					h, p = strings.Trim(hp, "[]"), "2181"
				}
				e.Registry = append(e.Registry, net.JoinHostPort(strings.ToLower(h), p))
			}
		}
	}
	if e.Protocol != ProtoHTTP {
		switch param("bizid") {
		case "int":
			e.BizID = BizIDInt
		case "string":
			e.BizID = BizIDString
		}
	}
	return e, nil
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

// String returns the endpoint as written.
func (e Endpoint) String() string { return redact(e.Raw) }

// URL is the http(s) URL a call goes to, without the per-message query of
// the HTTP shape.
func (e Endpoint) URL() *url.URL {
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

// PathUnescaped is the endpoint's path with %-escapes decoded.
func (e Endpoint) PathUnescaped() string {
	if p, err := url.PathUnescape(e.Path); err == nil {
		return p
	}
	return e.Path
}
