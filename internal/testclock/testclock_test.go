package testclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/internal/testclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestManual(t *testing.T) {
	t.Parallel()
	c := testclock.New()
	require.Equal(t, testclock.Start, c.Now())
	c.Advance(time.Minute)
	require.Equal(t, testclock.Start.Add(time.Minute), c.Now())
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Set(at)
	require.Equal(t, at, c.Now())
	require.Equal(t, at, testclock.At(at).Now())
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	c := testclock.New()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { c.Advance(time.Second); _ = c.Now() })
	}
	wg.Wait()
	require.Equal(t, testclock.Start.Add(8*time.Second), c.Now())
}

func TestReal(t *testing.T) {
	t.Parallel()
	c := testclock.Real()
	before := time.Now()
	c.Advance(time.Hour)
	require.WithinDuration(t, before, c.Now(), time.Minute, "follows the wall clock")
}
