package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	// The RocketMQ client (linked in through the center's targets, and
	// started by --target rocketmq) leaves goroutines it cannot stop.
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}
