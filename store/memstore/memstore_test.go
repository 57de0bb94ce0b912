package memstore_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The in-memory store passes the conformance suite the SQL drivers pass.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(_ *testing.T, now func() time.Time) store.Store { return memstore.New(now) })
}

// Per-key order: sequences, the claim rule, the fast path (docs/ordering.md).
func TestOrder(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOrder(t, func(_ *testing.T, now func() time.Time) store.Store { return memstore.New(now) })
}

// The in-memory store passes the fair-claim suite.
func TestFair(t *testing.T) {
	t.Parallel()
	storetest.ExerciseFair(t, func(_ *testing.T, now func() time.Time) store.Store { return memstore.New(now) })
}
