package producerapi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// messageState is the answer of GET /v1/messages/{bizID}/{key}: where the
// message is, without its payload, headers or errors (those are for the
// admin API).
type messageState struct {
	BizID  string `json:"biz_id"`
	Key    string `json:"key"`
	Status string `json:"status"`
	// SendStatus (PENDING, SENT, DEAD) is set once the message is
	// COMMITTED.
	SendStatus     string     `json:"send_status,omitempty"`
	SendRef        string     `json:"send_ref,omitempty"`
	VerifyAttempts int        `json:"verify_attempts"`
	SendAttempts   int        `json:"send_attempts"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	DecidedAt      *time.Time `json:"decided_at,omitempty"`
	SentAt         *time.Time `json:"sent_at,omitempty"`
	// Orphan is true for a COMMIT whose PREPARE never arrived (a COMMIT
	// for a key that was never prepared, or whose PREPARE was
	// dead-lettered): COMMITTED PENDING reads like a healthy message, but
	// there is nothing to send until a PREPARE comes. Note says so.
	Orphan bool   `json:"orphan,omitempty"`
	Note   string `json:"note,omitempty"`
}

// orphanNote is what the producer API says about an orphan COMMIT, in the
// words the admin CLI and the console use.
const orphanNote = "orphan COMMIT: no PREPARE was received for this key, so nothing will be forwarded " +
	"until one arrives; an operator closes it with: eventcenter admin close-orphan BIZID:KEY --reason ..."

func (h *Handler) get(w http.ResponseWriter, r *http.Request) int {
	bizID, key := r.PathValue("bizID"), r.PathValue("key")
	if err := h.allow(r, 1, one(bizID)); err != nil {
		return writeError(w, err)
	}
	m, err := h.cfg.Store.Get(r.Context(), bizID, key)
	if errors.Is(err, store.ErrNotFound) {
		return writeError(w, &apiError{code: http.StatusNotFound, msg: "no message " + bizID + ":" + key + " (not received yet, or purged by retention)"})
	}
	if err != nil {
		h.log.Warn("producer API: read message state", "biz_id", bizID, "key", key, "err", err)
		return writeError(w, &apiError{code: http.StatusServiceUnavailable, retryAfter: time.Second, msg: "the store is unavailable: retry (details in the center's log)"})
	}
	out := messageState{BizID: m.BizID, Key: m.Key, Status: m.Status.String(), VerifyAttempts: m.VerifyAttempts,
		SendAttempts: m.SendAttempts, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(), SendRef: m.SendRef}
	if m.Status == state.Committed {
		out.SendStatus = m.SendStatus.String()
	}
	if m.Orphan() {
		out.Orphan = true
		out.Note = strings.ReplaceAll(orphanNote, "BIZID:KEY", bizID+":"+key)
	}
	if !m.DecidedAt.IsZero() {
		t := m.DecidedAt.UTC()
		out.DecidedAt = &t
	}
	if !m.SentAt.IsZero() {
		t := m.SentAt.UTC()
		out.SentAt = &t
	}
	return writeJSON(w, http.StatusOK, out)
}
