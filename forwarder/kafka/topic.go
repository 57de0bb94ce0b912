package kafka

import (
	"errors"
	"fmt"

	"github.com/eventcenter/eventcenter/envelope"
)

// MaxTopicLen is the longest Kafka topic name (the envelope's rule).
const MaxTopicLen = envelope.MaxTopicLen

// CheckTopic returns an error when name is not a legal Kafka topic name: 1
// to 249 characters of letters, digits, '.', '_' and '-', and neither "."
// nor "..". It is the one statement of Kafka's rule in the project: the
// configuration's control and dead-letter topics and ingest's check of a
// PREPARE's forward topic for a Kafka target use it.
func CheckTopic(name string) error {
	switch {
	case name == "":
		return errors.New("a kafka topic name must not be empty")
	case len(name) > MaxTopicLen:
		return fmt.Errorf("kafka topic %q has %d characters, at most %d are allowed", name, len(name), MaxTopicLen)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a kafka topic name", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("kafka topic %q is invalid: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}
