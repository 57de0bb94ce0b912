//go:build rocketmqfake

package main

import (
	"errors"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
)

// haveRocketMQStandIn tells whether "dev --rocketmq" can run.
const haveRocketMQStandIn = true

// errNoRocketMQStandIn is never returned in this build.
var errNoRocketMQStandIn = errors.New("no RocketMQ stand-in")

// startRocketMQStandIn starts the wire-level RocketMQ stand-in for
// "dev --rocketmq" and returns its name server address and its stop.
func startRocketMQStandIn() (addr string, stop func(), err error) {
	s, err := rocketmqfake.Start(rocketmqfake.WithAutoCreate(true))
	if err != nil {
		return "", nil, err
	}
	return s.NameServerAddr(), s.Close, nil
}
