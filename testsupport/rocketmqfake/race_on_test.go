//go:build race

package rocketmqfake_test

const raceEnabled = true
