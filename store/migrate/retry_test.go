package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/migrate"
)

var errLocked = errors.New("lock timeout")

func lockRetry(tries int, retries *[]int) migrate.LockRetry {
	return migrate.LockRetry{
		Tries: tries, Backoff: time.Millisecond, Waited: "1s for a lock",
		Retryable: func(err error) bool { return errors.Is(err, errLocked) },
		OnRetry:   func(try int, _ time.Duration, _ error) { *retries = append(*retries, try) },
	}
}

func TestLockRetry(t *testing.T) {
	t.Parallel()
	t.Run("succeeds after lock timeouts", func(t *testing.T) {
		var retries []int
		runs := 0
		err := lockRetry(5, &retries).Do(t.Context(), func() error {
			runs++
			if runs < 3 {
				return errLocked
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, runs)
		require.Equal(t, []int{1, 2}, retries)
	})
	t.Run("gives up after Tries runs", func(t *testing.T) {
		var retries []int
		runs := 0
		err := lockRetry(3, &retries).Do(t.Context(), func() error { runs++; return errLocked })
		require.ErrorIs(t, err, errLocked)
		require.ErrorContains(t, err, "gave up after 3 tries, each waiting at most 1s for a lock")
		require.Equal(t, 3, runs)
	})
	t.Run("another error is not retried", func(t *testing.T) {
		var retries []int
		other := errors.New("syntax error")
		runs := 0
		err := lockRetry(5, &retries).Do(t.Context(), func() error { runs++; return other })
		require.Equal(t, other, err)
		require.Equal(t, 1, runs)
		require.Empty(t, retries)
	})
	t.Run("a cancelled context stops the waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var retries []int
		r := lockRetry(1000, &retries)
		r.Backoff = time.Hour
		err := r.Do(ctx, func() error { cancel(); return errLocked })
		require.ErrorIs(t, err, context.Canceled)
	})
}
