package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/store"
)

// apiAuditLog lists the audit log of every message, newest first:
// GET /api/v1/audit?biz_id=&since=RFC3339&before_id=&limit=.
func (h *handler) apiAuditLog(w http.ResponseWriter, r *http.Request, _ principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "biz_id", "since", "before_id", "limit"); err != nil {
		return err
	}
	limit, err := h.limit(q.Get("limit"))
	if err != nil {
		return err
	}
	aq := store.AuditQuery{BizID: q.Get("biz_id"), Limit: limit}
	if s := q.Get("since"); s != "" {
		if aq.Since, err = time.Parse(time.RFC3339, s); err != nil {
			return badRequest("since: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
		}
	}
	if s := q.Get("before_id"); s != "" {
		if aq.BeforeID, err = strconv.ParseInt(s, 10, 64); err != nil || aq.BeforeID < 1 {
			return badRequest("before_id: %q is not a positive number", s)
		}
	}
	es, err := h.st.AuditLog(r.Context(), aq)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	out := adminapi.AuditLog{Entries: make([]adminapi.AuditLogEntry, 0, len(es))}
	for _, e := range es {
		out.Entries = append(out.Entries, adminapi.AuditLogEntry{ID: e.ID, BizID: e.BizID, Key: e.Key, AuditEntry: adminapi.AuditEntry{
			Action: e.Action, Who: e.Who, Reason: e.Reason, At: e.At.UTC(), Before: e.Before, After: e.After}})
	}
	if len(es) == limit {
		out.Next = strconv.FormatInt(es[len(es)-1].ID, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
