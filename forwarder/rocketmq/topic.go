package rocketmq

import (
	"fmt"
	"regexp"
)

// MaxTopicLen is the longest RocketMQ topic name.
const MaxTopicLen = 127

var topicPattern = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// CheckTopic returns an error when name is not a topic the RocketMQ
// target can send to: 1 to 127 characters of letters, digits, %, |, _
// and -. It is the one statement of the rule: Message checks every record
// with it, and ingest dead-letters a PREPARE for a RocketMQ target whose
// topic fails it.
func CheckTopic(name string) error {
	if name == "" || len(name) > MaxTopicLen || !topicPattern.MatchString(name) {
		return fmt.Errorf("rocketmq topic %q is invalid: it must be 1 to %d characters of letters, digits, %%, |, _ and -", name, MaxTopicLen)
	}
	return nil
}
