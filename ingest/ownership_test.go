package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOwnershipAssignRevokeNotifies(t *testing.T) {
	t.Parallel()
	s := NewOwnership()
	ch := s.Changed()
	s.Assign(3, 1)
	select {
	case <-ch:
	default:
		t.Fatal("Assign did not signal a change")
	}
	require.Equal(t, []int32{1, 3}, s.Partitions())
	require.True(t, s.Owns(3))
	ch = s.Changed()
	s.Revoke(3)
	<-ch
	require.Equal(t, []int32{1}, s.Partitions())
	require.False(t, s.Owns(3))
}
