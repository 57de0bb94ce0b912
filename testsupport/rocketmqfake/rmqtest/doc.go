// Package rmqtest helps end-to-end tests read a RocketMQ topic back with the
// real rocketmq-client-go push consumer, usually against a
// testsupport/rocketmqfake server. It is kept apart from rocketmqfake so that
// the fake itself depends on the standard library only.
//
// The rocketmq client does not wait for its goroutines on Shutdown (see
// LeakOptions). Packages that start rocketmq clients in tests should pass
// LeakOptions() to goleak.VerifyTestMain.
package rmqtest
