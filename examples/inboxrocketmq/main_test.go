package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}
