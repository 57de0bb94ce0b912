package tracing

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Importing forwarder/rocketmq (for its message builder) starts the
	// rocketmq client's package-level cache janitor, which never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run"))
}
