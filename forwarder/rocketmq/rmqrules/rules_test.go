package rmqrules

import (
	"go/build"
	"strings"
	"testing"
)

func TestCheckGroup(t *testing.T) {
	for _, g := range []string{"eventcenter", "a", "GID_orders-1", "x%y|z", strings.Repeat("g", 255)} {
		if err := CheckGroup(g); err != nil {
			t.Errorf("CheckGroup(%q) = %v, want nil", g, err)
		}
	}
	for _, g := range []string{"", "has space", "dot.ted", "slash/", strings.Repeat("g", 256)} {
		if err := CheckGroup(g); err == nil {
			t.Errorf("CheckGroup(%q) = nil, want an error", g)
		}
	}
}

func TestCheckNameServer(t *testing.T) {
	for _, a := range []string{"127.0.0.1:9876", "[::1]:9876", "10.0.0.1:1"} {
		if err := CheckNameServer(a); err != nil {
			t.Errorf("CheckNameServer(%q) = %v, want nil", a, err)
		}
	}
	for a, want := range map[string]string{
		"127.0.0.1":           "not ip:port",
		"namesrv:9876":        "IP literal",
		"127.0.0.1:0":         "1-65535",
		"127.0.0.1:65536":     "1-65535",
		"127.0.0.1:port":      "1-65535",
		"::1:9876":            "not ip:port",
		"[fe80::1%eth0]:9876": "IP literal",
	} {
		err := CheckNameServer(a)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckNameServer(%q) = %v, want an error containing %q", a, err, want)
		}
	}
}

// The point of the package: configuration checks these rules without
// loading the RocketMQ client, whose packages start a goroutine at load.
func TestImportsNoClient(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, ".") {
			t.Errorf("rmqrules imports %s; it must use the standard library only", imp)
		}
	}
}
