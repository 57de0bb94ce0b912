package client

import (
	"context"
	"net/http"

	"github.com/eventcenter/eventcenter/admin/adminapi"
)

// BizShares returns the fair-share view per bizID: the send backlog, the
// oldest due message, and the answering center's weights, limits, send
// rate and throttles.
func (c *Client) BizShares(ctx context.Context) (adminapi.BizShares, error) {
	var out adminapi.BizShares
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/bizids", nil, nil, &out)
}
