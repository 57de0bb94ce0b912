package e2e

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	// The RocketMQ client leaves timers and pulls running after Shutdown.
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}
