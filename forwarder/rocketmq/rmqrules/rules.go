package rmqrules

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
)

// DefaultMaxMessageBytes is a RocketMQ broker's default maxMessageSize
// (4 MiB), which the Java client also checks before sending.
const DefaultMaxMessageBytes = 4 << 20

var groupPattern = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// CheckGroup accepts a producer group as the RocketMQ client does: 1 to
// 255 characters of letters, digits, %, |, _ and -.
func CheckGroup(g string) error {
	if len(g) > 255 || !groupPattern.MatchString(g) {
		return fmt.Errorf("%q must be 1 to 255 characters of letters, digits, %%, |, _ and -", g)
	}
	return nil
}

// CheckNameServer accepts "ip:port" with an IP literal (IPv6 in brackets):
// the client does not resolve names.
func CheckNameServer(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not ip:port: %w", a, err)
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("%q: host %q must be an IP literal (the RocketMQ client does not resolve names)", a, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q must be 1-65535", a, port)
	}
	return nil
}
