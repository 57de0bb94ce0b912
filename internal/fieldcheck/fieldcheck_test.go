package fieldcheck

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckerKeepsTheMessageAndTheField(t *testing.T) {
	t.Parallel()
	var c Checker
	require.NoError(t, c.Err())
	c.Prefix = "ingest config"
	c.Bad("MaxPayload", "must be 1 to %d, got %d", 10, 0)
	c.Bad("Brokers[1]", "is empty")
	err := c.Err()
	require.EqualError(t, err, "ingest config: MaxPayload: must be 1 to 10, got 0\ningest config: Brokers[1]: is empty")

	ps, others := Problems(fmt.Errorf("wrapped: %w", err))
	require.Empty(t, others)
	require.Equal(t, []*Problem{{Field: "MaxPayload", Text: "must be 1 to 10, got 0"}, {Field: "Brokers[1]", Text: "is empty"}}, ps)
}

func TestProblemsKeepsWhatIsNotOne(t *testing.T) {
	t.Parallel()
	var c Checker
	c.Bad("A", "bad")
	other := fmt.Errorf("older check: %w", errors.New("something else"))
	ps, others := Problems(errors.Join(c.Err(), other))
	require.Equal(t, []*Problem{{Field: "A", Text: "bad"}}, ps)
	require.Equal(t, []error{other}, others, "kept whole, with its context")
	ps, others = Problems(nil)
	require.Empty(t, ps)
	require.Empty(t, others)
}
