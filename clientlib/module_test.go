package clientlib

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientlib is its own module so that a producer importing it gets
// franz-go (and the OpenTelemetry API) and nothing of the center (no database driver, no RocketMQ
// client, no testcontainers, no chromedp). Its go.mod requires only
// franz-go and its compression libraries, the envelope module (standard
// library only), plus test-only modules, and
// never the center's module or a replace (which a producer's build would
// ignore or could not resolve).
func TestModuleNeedsOnlyFranzGo(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("go.mod")
	require.NoError(t, err, "clientlib must be a module of its own")
	allowed := map[string]bool{
		// The wire format and check-back protocol: standard library only.
		"github.com/eventcenter/eventcenter/envelope": true,
		"github.com/twmb/franz-go":                    true,
		"github.com/twmb/franz-go/pkg/kmsg":           true,
		"github.com/twmb/franz-go/plugin/kslog":       true, // franz-go's slog adapter
		"github.com/klauspost/compress":               true, // franz-go's compression
		"github.com/pierrec/lz4/v4":                   true, // franz-go's compression
		"github.com/twmb/franz-go/pkg/kfake":          true, // tests and examples
		"github.com/stretchr/testify":                 true, // tests
		"go.uber.org/goleak":                          true, // tests
		"go.yaml.in/yaml/v3":                          true, // testify's
		// The OpenTelemetry API (not the SDK): Prepare reads the span of its
		// context and sends its W3C trace context. Small, no exporter, no
		// gRPC; xxhash is what its trace package needs.
		"go.opentelemetry.io/otel":       true,
		"go.opentelemetry.io/otel/trace": true,
		"github.com/cespare/xxhash/v2":   true,
	}
	var module string
	var required []string
	inBlock := false
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inBlock && f[0] == ")":
			inBlock = false
		case inBlock:
			required = append(required, f[0])
		case f[0] == "module":
			module = f[1]
		case f[0] == "require" && f[1] == "(":
			inBlock = true
		case f[0] == "require":
			required = append(required, f[1])
		case f[0] == "replace":
			t.Errorf("clientlib/go.mod has a replace directive: %s", line)
		}
	}
	require.Equal(t, "github.com/eventcenter/eventcenter/clientlib", module)
	require.Contains(t, required, "github.com/twmb/franz-go")
	for _, r := range required {
		require.True(t, allowed[r], "clientlib/go.mod requires %s", r)
	}
}
