// Package rmqrules holds the RocketMQ target's rules for names, addresses
// and sizes without the RocketMQ client, so that configuration can check
// them without importing the client (whose packages start goroutines when
// they are loaded).
package rmqrules
