package sqlite_test

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

func newStore(t *testing.T, now func() time.Time) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "eventcenter.db"), sqlite.Options{Now: now, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newStore)
}

// Per-key order: sequences, the claim rule, the fast path (docs/ordering.md).
func TestOrder(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOrder(t, newStore)
}

// Fair claims (docs/fairness.md).
func TestFair(t *testing.T) {
	t.Parallel()
	storetest.ExerciseFair(t, newStore)
}

func TestOpenTwiceKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	clock := storetest.NewClock()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Now: clock.Now})
	require.NoError(t, err)
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Prepare("b", "k", 0, clock.Now())}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{Now: clock.Now}) // migrations already applied
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Get(t.Context(), "b", "k")
	require.NoError(t, err)
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		_, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		require.Error(t, err, path)
	}
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{BusyTimeout: -1})
	require.ErrorContains(t, err, "BusyTimeout")
	_, err = sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{ReadConns: -1})
	require.ErrorContains(t, err, "ReadConns")
}
