package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/eventcenter/eventcenter/admin/adminapi"
)

// BizShares returns the fair-share view per bizID: the send backlog, the
// oldest due message, and the answering center's weights, limits, send
// rate and throttles. It reads every page (see BizSharesPage).
func (c *Client) BizShares(ctx context.Context) (adminapi.BizShares, error) {
	var all adminapi.BizShares
	after := ""
	for {
		page, err := c.BizSharesPage(ctx, after, 0)
		if err != nil {
			return adminapi.BizShares{}, err
		}
		all.BizIDs = append(all.BizIDs, page.BizIDs...)
		all.Targets = page.Targets
		if page.Next == "" || page.Next <= after {
			return all, nil
		}
		after = page.Next
	}
}

// BizSharesPage returns one page of the view: at most limit bizIDs (0: the
// server's default) after the bizID after, in bizID order; Next is the
// after of the next page.
func (c *Client) BizSharesPage(ctx context.Context, after string, limit int) (adminapi.BizShares, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out adminapi.BizShares
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/bizids", q, nil, &out)
}
