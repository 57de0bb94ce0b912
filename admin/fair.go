package admin

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/store"
)

// bizShares joins the store's send backlog per bizID with this center's
// forwarder view (Config.Forwarding).
func (h *handler) bizShares(r *http.Request) (adminapi.BizShares, error) {
	rows := map[string]*adminapi.BizShare{}
	row := func(biz string) *adminapi.BizShare {
		if rows[biz] == nil {
			rows[biz] = &adminapi.BizShare{
				BizForwarding: adminapi.BizForwarding{BizID: biz, Weight: 1, Throttled: []string{}},
				BizCheckback:  adminapi.BizCheckback{CheckbackWeight: 1, CheckbackThrottled: []string{}},
			}
		}
		return rows[biz]
	}
	if h.cfg.Forwarding != nil {
		for _, f := range h.cfg.Forwarding() {
			if f.Throttled == nil {
				f.Throttled = []string{}
			}
			row(f.BizID).BizForwarding = f
		}
	}
	if h.cfg.Checkbacks != nil {
		for biz, c := range h.cfg.Checkbacks() {
			if c.CheckbackThrottled == nil {
				c.CheckbackThrottled = []string{}
			}
			row(biz).BizCheckback = c
		}
	}
	if bl, ok := h.st.(store.Backlogger); ok {
		bs, err := bl.SendBacklog(r.Context())
		if err != nil {
			return adminapi.BizShares{}, fmt.Errorf("send backlog: %w", err)
		}
		now := h.cfg.Now()
		for _, b := range bs {
			x := row(b.BizID)
			x.Backlog, x.Due = b.Pending, b.Due
			if !b.OldestDue.IsZero() {
				t := b.OldestDue.UTC()
				x.OldestDue = &t
				x.OldestDueAge = max(0, now.Sub(t).Seconds())
			}
		}
	}
	out := adminapi.BizShares{BizIDs: []adminapi.BizShare{}, Targets: []adminapi.TargetThrottle{}}
	if h.cfg.Targets != nil {
		out.Targets = append(out.Targets, h.cfg.Targets()...)
	}
	for _, biz := range slices.Sorted(maps.Keys(rows)) {
		out.BizIDs = append(out.BizIDs, *rows[biz])
	}
	return out, nil
}

func (h *handler) apiBizShares(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	out, err := h.bizShares(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// uiBizShares is the console's fair-share page.
func (h *handler) uiBizShares(w http.ResponseWriter, r *http.Request, _ principal) (*page, error) {
	out, err := h.bizShares(r)
	if err != nil {
		return nil, err
	}
	return &page{tmpl: "bizids", Title: "Fair share per bizID", Data: map[string]any{"BizIDs": out.BizIDs, "Targets": out.Targets}}, nil
}

// apiRegistries is GET /api/v1/registries: the check-back registries
// (Config.Registries), none when the center gives no view.
func (h *handler) apiRegistries(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	out := adminapi.CheckbackRegistries{Registries: []adminapi.CheckbackRegistry{}}
	if h.cfg.Registries != nil {
		out.Registries = append(out.Registries, h.cfg.Registries()...)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
