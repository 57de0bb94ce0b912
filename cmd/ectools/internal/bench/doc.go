// Package bench is the logic of "ectools bench": it drives producers
// through clientlib against an embedded (kfake + the center in process) or
// external setup, measures commit-to-forward latency and forwarded messages
// per second with a consumer of the business topic (with --target
// rocketmq, read back from the RocketMQ stand-in the bench runs in
// process, the center's forward target), times check-back resolution
// separately, and measures two baselines in the same run on the same
// machine (the broker alone, the store's lifecycle writes alone).
package bench
