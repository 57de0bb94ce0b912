package storetest

import (
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/testclock"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Clock is the tests' clock (internal/testclock): it stands still until
// advanced. Its times are UTC with microsecond precision, as the stores keep
// them.
type Clock = testclock.Clock

// NewClock returns a clock standing at a fixed instant.
func NewClock() *Clock { return testclock.New() }

// Prepare returns a PREPARE change with a body.
func Prepare(biz, key string, partition int32, at time.Time) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: partition, Event: state.Event{
		Kind: state.KindPrepare, At: at, Body: &state.Body{
			Payload:    []byte("payload of " + key),
			Headers:    []envelope.Header{{Key: "trace", Value: []byte("t-" + key)}},
			Topic:      "orders",
			ForwardKey: "fk-" + key,
			Verify:     "http://producer/check",
			CheckAfter: time.Minute,
		},
	}}
}

// Commit returns a COMMIT change.
func Commit(biz, key string, partition int32, at time.Time) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: partition, Event: state.Event{Kind: state.KindCommit, At: at}}
}

// Rollback returns a ROLLBACK change.
func Rollback(biz, key string, partition int32, at time.Time) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: partition, Event: state.Event{Kind: state.KindRollback, At: at}}
}

// Event returns a change carrying any event.
func Event(biz, key string, partition int32, ev state.Event) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: partition, Event: ev}
}

// Operator returns an operator change with an audit record.
func Operator(biz, key string, kind state.Kind, at time.Time, who string) store.Change {
	return store.Change{BizID: biz, Key: key, Event: state.Event{Kind: kind, At: at},
		Audit: &store.Actor{Who: who, Reason: "test " + kind.String()}}
}

// Keys returns n message keys with a prefix.
func Keys(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return ks
}
