package producerapi

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/eventcenter/eventcenter/envelope"
)

// paramNames are the routing parameters of a PREPARE: the control
// record's header names. ec-h-<name> parameters are forwarded headers.
var paramNames = []string{
	envelope.HeaderTopic, envelope.HeaderForwardKey, envelope.HeaderTarget,
	envelope.HeaderTag, envelope.HeaderVerify, envelope.HeaderCheckAfter,
	envelope.HeaderOrderKey, envelope.HeaderDeliverAt, envelope.HeaderDelay,
}

// requestParams collects a request's routing parameters as control record
// headers: HTTP headers named ec-* (names lower-cased, HTTP header names
// having no case; sorted by name, values in the order sent), then query
// parameters named ec-* (names and order as sent, so a forwarded header
// name keeps its case). Other HTTP headers are ignored; other query
// parameters, and ec-* names that are not parameters (ec-type, ec-biz and
// ec-key come from the path), are refused.
func requestParams(r *http.Request) ([]envelope.Header, *apiError) {
	var out []envelope.Header
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), envelope.HeaderPrefix) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		name := strings.ToLower(k)
		if err := checkParamName(name); err != nil {
			return nil, err
		}
		for _, v := range r.Header[k] {
			out = append(out, envelope.Header{Key: name, Value: []byte(v)})
		}
	}
	if r.URL.RawQuery == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(rawName)
		value, err2 := url.QueryUnescape(rawValue)
		if err1 != nil || err2 != nil {
			return nil, badRequest("query", "%q is not a valid query parameter (percent-encode names and values)", part)
		}
		if !strings.HasPrefix(name, envelope.HeaderPrefix) {
			return nil, badRequest(name, "unknown query parameter: the parameters are %s and ec-h-<name>", strings.Join(paramNames, ", "))
		}
		if err := checkParamName(name); err != nil {
			return nil, err
		}
		out = append(out, envelope.Header{Key: name, Value: []byte(value)})
	}
	return out, nil
}

// checkParamName accepts the routing parameters and ec-h-<name>.
func checkParamName(name string) *apiError {
	switch {
	case slices.Contains(paramNames, name), strings.HasPrefix(name, envelope.HeaderForwardPrefix):
		return nil
	case name == envelope.HeaderType || name == envelope.HeaderBiz || name == envelope.HeaderKey:
		return badRequest(name, "is given by the path (/v1/messages/{bizID}/{key}/prepare|commit|rollback|cancel), not as a parameter")
	}
	return badRequest(name, "unknown parameter: the parameters are %s and ec-h-<name>", strings.Join(paramNames, ", "))
}

// readAtMost reads r up to limit+1 bytes: more than limit says the body is
// too large without reading it all.
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, int64(limit)+1))
}
