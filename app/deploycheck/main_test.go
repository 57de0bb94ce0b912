package deploycheck

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

// The metrics test starts a center, whose clients leave the goroutines
// rmqtest lists (a package-level cache's janitor).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}
