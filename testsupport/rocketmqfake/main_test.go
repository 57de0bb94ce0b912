package rocketmqfake_test

import (
	"testing"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	rmqtest.Quiet()
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}
