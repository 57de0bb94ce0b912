package admin

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/store"
)

// bizShares joins the store's send backlog per bizID with this center's
// forwarder view (Config.Forwarding): the page of limit bizIDs after
// after, in bizID order.
func (h *handler) bizShares(r *http.Request, after string, limit int) (adminapi.BizShares, error) {
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
		if biz <= after {
			continue
		}
		if len(out.BizIDs) == limit {
			out.Next = out.BizIDs[limit-1].BizID
			break
		}
		out.BizIDs = append(out.BizIDs, *rows[biz])
	}
	return out, nil
}

// bizPage reads the page parameters of GET /api/v1/bizids and
// /ui/bizids: after (a bizID, exclusive) and limit.
// limit is at most and by default Config.MaxLimit.
func (h *handler) bizPage(q url.Values) (after string, limit int, err error) {
	if err := checkQuery(q, "after", "limit"); err != nil {
		return "", 0, err
	}
	limit = h.cfg.MaxLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > h.cfg.MaxLimit {
			return "", 0, badRequest("limit %q: want 1 to %d", s, h.cfg.MaxLimit)
		}
		limit = n
	}
	return q.Get("after"), limit, nil
}

func (h *handler) apiBizShares(w http.ResponseWriter, r *http.Request, _ principal) error {
	after, limit, err := h.bizPage(r.URL.Query())
	if err != nil {
		return err
	}
	out, err := h.bizShares(r, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// uiBizShares is the console's fair-share page.
func (h *handler) uiBizShares(w http.ResponseWriter, r *http.Request, _ principal) (*page, error) {
	after, limit, err := h.bizPage(r.URL.Query())
	if err != nil {
		return nil, err
	}
	out, err := h.bizShares(r, after, limit)
	if err != nil {
		return nil, err
	}
	next := ""
	if out.Next != "" {
		next = "/ui/bizids?" + url.Values{"after": {out.Next}, "limit": {strconv.Itoa(limit)}}.Encode()
	}
	return &page{tmpl: "bizids", Title: "Fair share per bizID", Data: map[string]any{"BizIDs": out.BizIDs, "Targets": out.Targets, "Next": next}}, nil
}

// uiRegistries is the console's page of check-back registries: per
// registry its connection and outcomes, per service its providers and
// last read error; services without a provider first.
func (h *handler) uiRegistries(w http.ResponseWriter, r *http.Request, _ principal) (*page, error) {
	if err := checkQuery(r.URL.Query()); err != nil {
		return nil, err
	}
	var regs []adminapi.CheckbackRegistry
	if h.cfg.Registries != nil {
		regs = h.cfg.Registries()
	}
	type row struct {
		adminapi.CheckbackRegistry
		Without  int
		Outcomes []string
	}
	rows := make([]row, 0, len(regs))
	down, without := 0, 0
	for _, reg := range regs {
		rw := row{CheckbackRegistry: reg}
		rw.Services = slices.Clone(reg.Services)
		slices.SortStableFunc(rw.Services, func(a, b adminapi.RegistryService) int {
			return cmp.Compare(min(a.Providers, 1), min(b.Providers, 1))
		})
		for _, s := range reg.Services {
			if s.Providers == 0 {
				rw.Without++
			}
		}
		for _, o := range slices.Sorted(maps.Keys(reg.Outcomes)) {
			rw.Outcomes = append(rw.Outcomes, fmt.Sprintf("%s %d", o, reg.Outcomes[o]))
		}
		if !reg.Connected {
			down++
		}
		without += rw.Without
		rows = append(rows, rw)
	}
	return &page{tmpl: "registries", Title: "Check-back registries",
		Data: map[string]any{"Registries": rows, "Down": down, "Without": without}}, nil
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
