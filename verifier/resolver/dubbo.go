package resolver

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// DefaultWeight is a Dubbo provider's weight when its URL names none.
const DefaultWeight = 100

// providerURL is one provider as its registry node names it.
type providerURL struct {
	protocol  string // the URL's scheme: tri, jsonrpc, dubbo, rest, ...
	host      string // host:port
	path      string // the service path (JSON-RPC calls go there)
	iface     string
	version   string
	group     string
	weight    int
	disabled  bool
	raw       string // decoded, for messages
	parseFail string // why the node could not be read, or ""
}

// parseProvider reads a child of /dubbo/<interface>/providers: a
// URL-encoded provider URL.
func parseProvider(node string) providerURL {
	raw, err := url.QueryUnescape(node)
	if err != nil {
		return providerURL{raw: node, parseFail: "not URL-encoded: " + err.Error()}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return providerURL{raw: raw, parseFail: "not a provider URL"}
	}
	q := u.Query()
	p := providerURL{
		protocol: strings.ToLower(u.Scheme),
		host:     u.Host,
		path:     u.Path,
		iface:    q.Get("interface"),
		version:  q.Get("version"),
		group:    q.Get("group"),
		weight:   DefaultWeight,
		disabled: q.Get("enabled") == "false" || q.Get("disabled") == "true",
		raw:      raw,
	}
	if p.iface == "" {
		p.iface = strings.TrimPrefix(u.Path, "/")
	}
	if w := q.Get("weight"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			p.parseFail = "weight " + strconv.Quote(w) + " is not a number"
		}
		p.weight = n
	}
	return p
}

// versionMatches reads version and group as Dubbo does: "*" matches any;
// a consumer group may list several, comma-separated; "" and "0.0.0" are
// the same version.
func versionMatches(want, have string) bool {
	if want == "*" {
		return true
	}
	norm := func(v string) string {
		if v == "0.0.0" {
			return ""
		}
		return v
	}
	return norm(want) == norm(have)
}

func groupMatches(want, have string) bool {
	if want == "*" || want == have {
		return true
	}
	if strings.Contains(want, ",") {
		for g := range strings.SplitSeq(want, ",") {
			if g == have || g == "*" {
				return true
			}
		}
	}
	return false
}

// withoutZeroWeights drops the providers of weight 0 when some have a
// weight, and gives them all weight 1 when none has.
func withoutZeroWeights(ps []Provider) []Provider {
	weighted := ps[:0:0]
	for _, p := range ps {
		if p.Weight > 0 {
			weighted = append(weighted, p)
		}
	}
	if len(weighted) > 0 {
		return weighted
	}
	for i := range ps {
		ps[i].Weight = 1
	}
	return ps
}

// speaks maps a provider URL's protocol to the center's.
func speaks(protocol string) checkback.Protocol {
	switch protocol {
	case "tri":
		return checkback.ProtoTriple
	case "jsonrpc":
		return checkback.ProtoJSONRPC
	}
	return 0
}

// selectProviders turns a service's provider list into the direct
// endpoints ep may call, or says why there is none. Providers of weight 0
// are called only when no provider has a weight, and then with equal
// weights, as Dubbo's random load balance does: dubbo-go registers
// weight=0 unless its configuration names a weight.
func selectProviders(ep checkback.Endpoint, registry string, list []providerURL) ([]Provider, error) {
	var out []Provider
	var other, unspoken, wrongVia, disabled, broken []string
	for _, p := range list {
		switch {
		case p.parseFail != "":
			broken = append(broken, p.parseFail)
			continue
		case p.iface != ep.Interface:
			continue
		case !versionMatches(ep.Version, p.version) || !groupMatches(ep.Group, p.group):
			other = append(other, fmt.Sprintf("version %q group %q", p.version, p.group))
			continue
		case p.disabled:
			disabled = append(disabled, p.host)
			continue
		}
		proto := speaks(p.protocol)
		switch {
		case proto == 0:
			unspoken = append(unspoken, p.protocol)
			continue
		case ep.Via != 0 && proto != ep.Via:
			wrongVia = append(wrongVia, p.protocol)
			continue
		}
		d, err := ep.Provider(proto, p.host, p.path)
		if err != nil {
			broken = append(broken, err.Error())
			continue
		}
		out = append(out, Provider{Endpoint: d, Weight: p.weight})
	}
	if len(out) > 0 {
		return withoutZeroWeights(out), nil
	}
	what := fmt.Sprintf("%s (version %q, group %q) in registry zookeeper://%s", ep.Interface, ep.Version, ep.Group, registry)
	switch {
	case len(unspoken) > 0:
		return nil, &NoProviderError{Service: ep.Interface, Registry: registry,
			Reason: fmt.Sprintf("the providers of %s speak only %s: export the service with protocol tri (Triple, Dubbo 3.3 or later, which answers JSON over HTTP/1.1) or jsonrpc for the center to check back", what, strings.Join(uniq(unspoken), ", "))}
	case len(wrongVia) > 0:
		return nil, &NoProviderError{Service: ep.Interface, Registry: registry,
			Reason: fmt.Sprintf("the providers of %s speak only %s, and the endpoint asks protocol=%s", what, strings.Join(uniq(wrongVia), ", "), viaName(ep.Via))}
	case len(disabled) > 0:
		return nil, &NoProviderError{Service: ep.Interface, Registry: registry,
			Reason: fmt.Sprintf("every provider of %s is disabled (%s)", what, strings.Join(uniq(disabled), ", "))}
	case len(other) > 0:
		return nil, &NoProviderError{Service: ep.Interface, Registry: registry,
			Reason: fmt.Sprintf("no provider of %s: the registry lists only %s", what, strings.Join(uniq(other), ", "))}
	case len(broken) > 0:
		return nil, &NoProviderError{Service: ep.Interface, Registry: registry,
			Reason: fmt.Sprintf("no provider of %s: unreadable provider entries (%s)", what, strings.Join(uniq(broken), "; "))}
	}
	return nil, &NoProviderError{Service: ep.Interface, Registry: registry, Reason: "no provider of " + what}
}

func viaName(p checkback.Protocol) string {
	if p == checkback.ProtoTriple {
		return "tri"
	}
	return "jsonrpc"
}

// uniq sorts s and drops repeats, keeping at most 5 for a message.
func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return out
}
