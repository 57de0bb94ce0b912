package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// compatMessage is TrustMessage's MiddlewareMessage.
type compatMessage struct {
	Message       *string         `json:"message"`
	BizID         json.RawMessage `json:"bizID"`
	MessageKey    string          `json:"messageKey"`
	MessageStatus int             `json:"messageStatus"`
	ForwardTopic  string          `json:"forwardTopic"`
	ForwardKey    string          `json:"forwardKey"`
	VerifyInfo    *compatVerify   `json:"verifyInfo"`
}

// compatVerify is TrustMessage's VerifyInfo (protocolType, url, version,
// registryProtocol, registryAddress) plus the Dubbo fields a direct call
// needs (interface, method, group, address).
type compatVerify struct {
	ProtocolType     int    `json:"protocolType"`
	URL              string `json:"url"`
	Interface        string `json:"interface"`
	Method           string `json:"method"`
	Version          string `json:"version"`
	Group            string `json:"group"`
	Address          string `json:"address"`
	RegistryProtocol string `json:"registryProtocol"`
	RegistryAddress  string `json:"registryAddress"`
}

// Compatibility verifyInfo.protocolType values.
const (
	compatHTTP  = 1
	compatDubbo = 2
)

// compatField maps native field names to the JSON ones in errors.
var compatField = map[string]string{
	HeaderType:       "messageStatus",
	HeaderBiz:        "bizID",
	HeaderKey:        "messageKey",
	HeaderTopic:      "forwardTopic",
	HeaderForwardKey: "forwardKey",
	HeaderVerify:     "verifyInfo",
	"value":          "message",
}

func (d Decoder) decodeCompat(r *Record) (Envelope, *problem) {
	v := bytes.TrimLeft(r.Value, " \t\r\n")
	if len(v) == 0 || v[0] != '{' {
		return Envelope{}, invalid(HeaderType, "missing, and the value is not a MiddlewareMessage JSON object either")
	}
	// JSON escaping can grow a payload up to six times; refuse to parse
	// values that cannot hold an acceptable payload.
	if max := d.maxPayload(); max < (1<<40) && len(r.Value) > 6*max+64<<10 {
		return Envelope{}, &problem{field: "value", reason: "MiddlewareMessage JSON of " + itoa(len(r.Value)) + " bytes exceeds the limit", err: ErrTooLarge}
	}
	var m compatMessage
	if err := json.Unmarshal(r.Value, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Envelope{}, invalid(te.Field, "want a JSON %s, got %s", te.Type, te.Value)
		}
		return Envelope{}, invalid("value", "MiddlewareMessage JSON: %v", err)
	}

	var e Envelope
	e.Format = Compat
	switch m.MessageStatus {
	case 1, 2, 3:
		e.Type = Type(m.MessageStatus)
	case 0:
		return e, &problem{field: "messageStatus", reason: "missing (want 1 prepare, 2 commit or 3 rollback)", err: ErrUnknownType}
	default:
		return e, &problem{field: "messageStatus", reason: strconv.Itoa(m.MessageStatus) + " is not 1 prepare, 2 commit or 3 rollback", err: ErrUnknownType}
	}
	biz, numeric, p := compatBizID(m.BizID)
	if p != nil {
		return e, p
	}
	e.BizID = biz
	e.MessageKey = m.MessageKey

	if e.Type == Prepare {
		if m.Message != nil && len(*m.Message) > 0 {
			if len(*m.Message) > d.maxPayload() {
				return e, &problem{field: "message", reason: "payload of " + itoa(len(*m.Message)) + " bytes exceeds the limit of " + itoa(d.maxPayload()), err: ErrTooLarge}
			}
			e.Payload = []byte(*m.Message)
		}
		e.ForwardTopic = m.ForwardTopic
		e.ForwardKey = m.ForwardKey
		verify, p := compatVerifyEndpoint(m.VerifyInfo, numeric)
		if p != nil {
			return e, p
		}
		e.Verify = verify
	}
	// Commit and rollback: message, forwardTopic and verifyInfo are ignored
	// (TrustMessage producers resend the whole object with a new status).
	if p := validate(&e); p != nil {
		if f, ok := compatField[p.field]; ok {
			p.field = f
		}
		return Envelope{}, p
	}
	return e, nil
}

// compatBizID reads bizID, a JSON integer or string.
func compatBizID(raw json.RawMessage) (biz string, numeric bool, p *problem) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, invalid("bizID", "required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, invalid("bizID", "%v", err)
		}
		if s == "" {
			return "", false, invalid("bizID", "required")
		}
		return s, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return "", false, invalid("bizID", "%s is neither an integer nor a string", quoteBytes(raw))
	}
	return strconv.FormatInt(n, 10), true, nil
}

// compatVerifyEndpoint maps verifyInfo onto the endpoint grammar of
// envelope/checkback (docs/checkback.md): the http(s) URL, or
// tri://host:port/<interface>/<method>?version=..&group=..&bizid=int.
func compatVerifyEndpoint(vi *compatVerify, numericBiz bool) (string, *problem) {
	if vi == nil || *vi == (compatVerify{}) {
		return "", nil
	}
	switch vi.ProtocolType {
	case compatHTTP:
		if vi.URL == "" {
			return "", invalid("verifyInfo.url", "required for protocolType 1 (http)")
		}
		u, err := url.Parse(vi.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", invalid("verifyInfo.url", "%s is not an http(s) URL", quote(vi.URL))
		}
		if p := checkVerify("verifyInfo.url", vi.URL); p != nil {
			return "", p
		}
		return vi.URL, nil
	case compatDubbo:
		return compatDubboEndpoint(vi, numericBiz)
	default:
		return "", invalid("verifyInfo.protocolType", "%d is not 1 (http) or 2 (dubbo)", vi.ProtocolType)
	}
}

func compatDubboEndpoint(vi *compatVerify, numericBiz bool) (string, *problem) {
	iface, method, addr := vi.Interface, vi.Method, vi.Address
	version, group := vi.Version, vi.Group
	scheme := "tri"
	if vi.URL != "" {
		if !strings.Contains(vi.URL, "://") {
			// TrustMessage puts the interface name in url.
			if iface == "" {
				iface = vi.URL
			}
		} else {
			u, err := url.Parse(vi.URL)
			if err != nil {
				return "", invalid("verifyInfo.url", "%s is not a URL: %v", quote(vi.URL), err)
			}
			switch u.Scheme {
			case "dubbo", "tri":
			case "tris":
				scheme = "tris"
			default:
				return "", invalid("verifyInfo.url", "%s: a Dubbo endpoint URL is dubbo://, tri:// or tris://host:port/<interface>[/<method>]", quote(vi.URL))
			}
			if addr == "" {
				addr = u.Host
			}
			pi, pm, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
			if iface == "" {
				iface = pi
			}
			if method == "" {
				method = pm
			}
			q := u.Query()
			if version == "" {
				version = q.Get("version")
			}
			if group == "" {
				group = q.Get("group")
			}
		}
	}
	if iface == "" {
		return "", invalid("verifyInfo.interface", "required for protocolType 2 (dubbo)")
	}
	if method == "" {
		method = checkback.DefaultMethod
	}
	if strings.Contains(iface, "/") || strings.Contains(method, "/") {
		return "", invalid("verifyInfo.interface", "%s/%s: interface and method cannot contain '/'", quote(iface), quote(method))
	}
	if addr == "" {
		return compatRegistryEndpoint(vi, iface, method, version, group, numericBiz)
	}
	if strings.ContainsAny(addr, "/?#@") {
		return "", invalid("verifyInfo.address", "%s is not host:port", quote(addr))
	}
	t := checkback.Triple{TLS: scheme == "tris", Host: addr, Interface: iface, Method: method, Version: version, Group: group}
	if numericBiz {
		t.BizID = checkback.BizIDInt
	}
	s := t.String()
	if p := checkVerify("verifyInfo", s); p != nil {
		return "", p
	}
	return s, nil
}

// compatRegistryEndpoint maps a Dubbo verifyInfo without a direct address
// onto zookeeper://host:port/<interface>?version=..&group=..&method=..
// &bizid=int[&backup=host:port,...]: registryAddress is host:port, a list
// of them (comma-separated: one ZooKeeper ensemble) or the same behind
// zookeeper://. Other registries are refused with the reason.
func compatRegistryEndpoint(vi *compatVerify, iface, method, version, group string, numericBiz bool) (string, *problem) {
	proto := strings.ToLower(vi.RegistryProtocol)
	addr := strings.TrimSpace(vi.RegistryAddress)
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		if proto == "" {
			proto = strings.ToLower(scheme)
		}
		addr = rest
	}
	if addr == "" {
		return "", invalid("verifyInfo.address", "Dubbo endpoint %s has neither an address nor a registryAddress", quote(iface))
	}
	if proto != "zookeeper" {
		return "", invalid("verifyInfo.registryProtocol", "Dubbo endpoint %s names a %s registry (%s): only zookeeper registries are supported; give a direct host:port in verifyInfo.address or url tri://host:port/<interface>/<method>, or send ec-verify in the native format",
			quote(iface), quote(vi.RegistryProtocol), quote(vi.RegistryAddress))
	}
	// zookeeper://zk1:2181?backup=zk2:2181 as Dubbo spells it, or
	// zk1:2181,zk2:2181.
	addr, query, _ := strings.Cut(addr, "?")
	addr = strings.TrimSuffix(addr, "/")
	var backup []string
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return "", invalid("verifyInfo.registryAddress", "%s: %v", quote(vi.RegistryAddress), err)
		}
		if b := q.Get("backup"); b != "" {
			backup = strings.Split(b, ",")
		}
	}
	hosts := strings.Split(addr, ",")
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/?#@") {
			return "", invalid("verifyInfo.registryAddress", "%s is not host:port[,host:port...]", quote(vi.RegistryAddress))
		}
	}
	backup = append(hosts[1:], backup...)
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	if group != "" {
		q.Set("group", group)
	}
	if method != checkback.DefaultMethod {
		q.Set("method", method)
	}
	if numericBiz {
		q.Set("bizid", "int")
	}
	if len(backup) > 0 {
		q.Set("backup", strings.Join(backup, ","))
	}
	u := url.URL{Scheme: "zookeeper", Host: hosts[0], Path: "/" + iface, RawQuery: q.Encode()}
	s := u.String()
	if p := checkVerify("verifyInfo", s); p != nil {
		return "", p
	}
	return s, nil
}
