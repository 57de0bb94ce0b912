package sqlcore

import (
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// Claim checks c (codec.CheckClaim) and runs claim unless c names no
// partition; the rows claim returns with an error are dropped.
func Claim(c store.Claim, claim func() ([]state.Message, error)) ([]state.Message, error) {
	if err := codec.CheckClaim(c); err != nil {
		return nil, err
	}
	if len(c.Partitions) == 0 {
		return nil, nil
	}
	ms, err := claim()
	if err != nil {
		return nil, err
	}
	return ms, nil
}
