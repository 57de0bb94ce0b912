package rocketmqfake

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"strings"
)

// ACL extension fields of a signed request.
const (
	aclAccessKey = "AccessKey"
	aclSignature = "Signature"
)

// WithACL makes the broker check the ACL signature of sends (10, 320), as a
// broker with aclEnable does for a user with this access key and secret
// key: the request must carry AccessKey and a Signature that is the
// base64 HMAC-SHA1, keyed by the secret key, of the values of every other
// extension field in key order followed by the body. A send that fails the
// check is answered NO_PERMISSION (16) with a remark saying why, and
// counted (ACLFailures). Routes are not checked: the name server has no ACL.
func WithACL(accessKey, secretKey string) Option {
	return func(c *config) { c.accessKey, c.secretKey = accessKey, secretKey }
}

// ACLFailures is how many requests failed the ACL check.
func (s *Server) ACLFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aclFailures
}

// checkACL returns why req fails the ACL check, or "".
func (s *Server) checkACL(req *command) string {
	if s.cfg.accessKey == "" {
		return ""
	}
	ak, ok := req.ExtFields[aclAccessKey]
	switch {
	case !ok || ak == "":
		return "No accessKey is configured"
	case ak != s.cfg.accessKey:
		return "No acl config for " + ak
	}
	if !hmac.Equal([]byte(req.ExtFields[aclSignature]), []byte(Sign(req.ExtFields, req.Body, s.cfg.secretKey))) {
		return "Check signature failed for accessKey=" + ak
	}
	return ""
}

// Sign computes the ACL signature of a request with these extension fields
// (Signature excluded) and body, as the broker checks it.
func Sign(ext map[string]string, body []byte, secretKey string) string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != aclSignature {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(ext[k])
	}
	m := hmac.New(sha1.New, []byte(secretKey))
	m.Write([]byte(b.String()))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
