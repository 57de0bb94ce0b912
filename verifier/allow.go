package verifier

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

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
	path   string // "" for an origin rule; else checkback.NormalPath's form, no trailing "/"
}

func parseAllowRule(s string) (allowRule, error) {
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
	if r.scheme != e.Scheme || r.host != e.Host {
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
