package verifier

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// CheckAllowEntry reports whether s is a valid allow-list entry (Config.Allow,
// BizConfig.Allow): an origin such as http://10.0.0.1:8080, a URL prefix
// such as http://10.0.0.1:8080/cb/, or a network in brackets in place of
// the host, tri://[10.0.0.0/8] or tri://[fd00::/8]:20000 (any IP address
// of the network on that port, the scheme's default when none is
// written; a path prefix may follow). The error says what is wrong with
// it; a rule that could be read two ways (tri://10.0.0.0/8: the path /8
// on one host, or a network?) is refused with the spelling of each.
func CheckAllowEntry(s string) error {
	_, err := parseAllowRule(s)
	return err
}

// allowRule is one parsed entry of an allow list.
type allowRule struct {
	scheme string
	host   string // lower-cased host:port; for a network rule, ":port"
	path   string // "" for an origin rule; else checkback.NormalPath's form, no trailing "/"
	// network, when valid, is a network rule's network (masked, never an
	// IPv4-mapped IPv6 one): the endpoint's host must be an IP address in
	// it, and its port host's.
	network netip.Prefix
}

// networkHost stands for a network rule's bracketed network while the
// rest of the rule is read as any other.
const networkHost = "network.invalid"

func parseAllowRule(s string) (allowRule, error) {
	if scheme, rest, ok := strings.Cut(s, "://"); ok && strings.HasPrefix(rest, "[") {
		if end := strings.IndexByte(rest, ']'); end > 0 && strings.IndexByte(rest[:end], '/') >= 0 {
			return parseNetworkRule(scheme, rest[1:end], rest[end+1:])
		}
	}
	r, err := parseURLRule(s)
	if err != nil {
		return r, err
	}
	// An IP host followed by a number, tri://10.0.0.0/8, reads as a path
	// prefix but was most likely meant as a network.
	h, _, _ := net.SplitHostPort(r.host)
	if ip, err := netip.ParseAddr(h); err == nil && numericFirstSegment(r.path) {
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.path, "/"), "/")
		return allowRule{}, fmt.Errorf("ambiguous: %q reads as the path prefix /%s on the single host %s; a network is written in brackets in place of the host, %s://[%s/%s] (with :port for another port than %s's default); a path whose first segment is a number cannot follow an IP host",
			s, seg, ip, r.scheme, ip, seg, r.scheme)
	}
	return r, nil
}

// numericFirstSegment tells whether a rule path's first segment is all
// digits.
func numericFirstSegment(path string) bool {
	seg, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if seg == "" {
		return false
	}
	for _, c := range []byte(seg) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseNetworkRule reads scheme://[network]rest: network is a CIDR
// prefix, rest an optional :port and path prefix as in an origin or URL
// prefix rule.
func parseNetworkRule(scheme, network, rest string) (allowRule, error) {
	p, err := netip.ParsePrefix(network)
	if err != nil {
		return allowRule{}, fmt.Errorf("[%s] is not a network (want [10.0.0.0/8] or [fd00::/8]): %w", network, err)
	}
	switch {
	case p.Addr().Is4In6():
		return allowRule{}, fmt.Errorf("[%s] is an IPv4-mapped IPv6 network: write the IPv4 network (it matches mapped addresses too)", network)
	case p.Bits() == 0:
		return allowRule{}, fmt.Errorf("[%s] is every address: list the networks the providers are in", network)
	case p.Masked() != p:
		return allowRule{}, fmt.Errorf("ambiguous: [%s] has bits set past the prefix length: write the network [%s] or the single host %s", network, p.Masked(), hostOf(p.Addr()))
	}
	r, err := parseURLRule(scheme + "://" + networkHost + rest)
	if err != nil {
		return allowRule{}, err
	}
	_, port, _ := net.SplitHostPort(r.host)
	r.host, r.network = ":"+port, p
	return r, nil
}

// hostOf writes an address as a URL host.
func hostOf(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

func parseURLRule(s string) (allowRule, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return allowRule{}, err
	}
	scheme := strings.ToLower(u.Scheme)
	port, ok := checkback.DefaultPort(scheme)
	if !ok {
		return allowRule{}, fmt.Errorf("scheme %q (want http, https, tri, tris, jsonrpc, jsonrpcs or zookeeper)", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return allowRule{}, errors.New("an allow entry is an origin or a URL prefix: no query, fragment or user")
	}
	h := u.Hostname()
	if h == "" {
		return allowRule{}, errors.New("no host")
	}
	if u.Port() != "" {
		port = u.Port()
	} else if strings.HasSuffix(u.Host, ":") {
		return allowRule{}, errors.New("empty port")
	}
	// The path as written: endpoints are matched on their escaped path, so
	// an encoded "/" or dot segment can never pass for a segment boundary.
	p := u.EscapedPath()
	if hasEncodedEscape(p) {
		return allowRule{}, errors.New("an encoded slash, backslash or dot segment in the path (%2F, %5C, %2E)")
	}
	if strings.Trim(p, "/") == "" {
		p = ""
	} else {
		// Compared as endpoints are: as a server reads the path.
		np, ok := checkback.NormalPath(p)
		if !ok {
			return allowRule{}, errors.New("a path segment a server could read as a dot segment or as two segments (\"..;\", %252e, %252f...)")
		}
		p = np
	}
	// Endpoint.Host is lower-cased host:port with the default port filled in.
	return allowRule{scheme: scheme, host: net.JoinHostPort(strings.ToLower(h), port), path: p}, nil
}

// allows tells whether e matches the rule: same scheme, host and port, and
// for a prefix rule, the same path or a path below it (segment-wise, so
// /check does not allow /checkout). Paths are compared escaped, as written:
// /cb%2f..%2fadmin is not below /cb/ (the endpoint grammar refuses it
// anyway), and an endpoint spelling a plain character as %XX does not
// match a rule spelling it plainly.
func (r allowRule) allows(e checkback.Endpoint) bool {
	if r.scheme != e.Scheme {
		return false
	}
	if r.network.IsValid() {
		if !r.inNetwork(e.Host) {
			return false
		}
	} else if r.host != e.Host {
		return false
	}
	if r.path == "" {
		return true
	}
	if hasEncodedEscape(e.Path) {
		return false
	}
	// Compared as a server reads them: segments unescaped and without
	// ;parameters, so that /cb/..;/admin or /cb/%252e%252e/admin (which
	// the endpoint grammar refuses anyway) is never "below" /cb/.
	p, ok := checkback.NormalPath(e.Path)
	if !ok {
		return false
	}
	return p == r.path || strings.HasPrefix(p, r.path+"/")
}

// inNetwork tells whether host (host:port, as in Endpoint.Host) is an IP
// address of r's network on r's port. A name never is, whatever it
// resolves to; an IPv4-mapped IPv6 address is its IPv4 address.
func (r allowRule) inNetwork(host string) bool {
	h, port, err := net.SplitHostPort(host)
	if err != nil || ":"+port != r.host {
		return false
	}
	a, err := netip.ParseAddr(h)
	if err != nil || a.Zone() != "" {
		return false
	}
	return r.network.Contains(a.Unmap())
}

// hasEncodedEscape tells whether an escaped path holds %2F, %5C or %2E in
// any case, or a bare backslash: a slash, backslash or dot that a server
// decoding the path would see and a prefix comparison would not.
func hasEncodedEscape(p string) bool {
	if strings.IndexByte(p, '\\') >= 0 {
		return true
	}
	for i := 0; i+2 < len(p); i++ {
		if p[i] != '%' {
			continue
		}
		switch strings.ToLower(p[i+1 : i+3]) {
		case "2f", "5c", "2e":
			return true
		}
	}
	return false
}
