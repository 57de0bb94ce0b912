//go:build !rocketmqfake

package main

import "errors"

// errNoRocketMQStandIn is dev --rocketmq in the product binary: the
// stand-in is test code, linked only with -tags rocketmqfake.
var errNoRocketMQStandIn = errors.New("this binary has no RocketMQ stand-in; build it with -tags rocketmqfake " +
	"(go run -tags rocketmqfake ./cmd/eventcenter dev --rocketmq) or configure a real RocketMQ forward target")

// haveRocketMQStandIn tells whether "dev --rocketmq" can run.
const haveRocketMQStandIn = false

func startRocketMQStandIn() (addr string, stop func(), err error) {
	return "", nil, errNoRocketMQStandIn
}
