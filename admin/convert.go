package admin

import (
	"encoding/base64"
	"time"
	"unicode/utf8"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func textOf(b []byte) *string {
	if !utf8.Valid(b) {
		return nil
	}
	s := string(b)
	return &s
}

func toAPI(m state.Message) adminapi.Message {
	a := adminapi.Message{
		ID: m.MessageID(), BizID: m.BizID, Key: m.Key, Partition: m.Partition,
		Status: m.Status.String(), HasBody: m.HasBody,
		Target: m.Target, Topic: m.Topic, ForwardKey: m.ForwardKey, Tag: m.Tag, Verify: m.Verify,
		VerifyAttempts: m.VerifyAttempts, SendAttempts: m.SendAttempts,
		SendRef: m.SendRef, LastError: m.LastError, Conflicts: m.Conflicts,
		OrderKey: m.OrderKey, OrderSeq: m.OrderSeq, DeliverAt: tp(m.DeliverAt),
		PayloadSize: len(m.Payload),
		CreatedAt:   tp(m.CreatedAt), UpdatedAt: tp(m.UpdatedAt), DecidedAt: tp(m.DecidedAt), SentAt: tp(m.SentAt),
	}
	if m.Status == state.Prepared {
		a.VerifyNextAt = tp(m.VerifyNextAt)
	}
	if m.Status == state.Committed {
		a.SendStatus = m.SendStatus.String()
		if m.SendStatus == state.SendPending {
			a.SendNextAt = tp(m.SendNextAt)
		}
	}
	return a
}

// summaryAPI is toAPI for a listed message, which carries its payload's
// size but not the payload (store.Summary).
func summaryAPI(s store.Summary) adminapi.Message {
	a := toAPI(s.Message)
	a.PayloadSize = s.PayloadSize
	return a
}

func headersOf(hs []envelope.Header) []adminapi.Header {
	var out []adminapi.Header
	for _, h := range hs {
		out = append(out, adminapi.Header{Key: h.Key, Value: textOf(h.Value), ValueBase64: base64.StdEncoding.EncodeToString(h.Value)})
	}
	return out
}

func toDetail(m state.Message, audit []store.AuditEntry, now time.Time) adminapi.MessageDetail {
	d := adminapi.MessageDetail{
		Message:       toAPI(m),
		PayloadBase64: base64.StdEncoding.EncodeToString(m.Payload),
		PayloadText:   textOf(m.Payload),
		Headers:       headersOf(m.Headers),
		Audit:         []adminapi.AuditEntry{},
		Actions:       allowedActions(m, now),
	}
	for _, e := range audit {
		d.Audit = append(d.Audit, adminapi.AuditEntry{
			Action: e.Action, Who: e.Who, Reason: e.Reason, At: e.At.UTC(), Before: e.Before, After: e.After,
		})
	}
	return d
}

// Action names as the API and console spell them.
const (
	actionResolve     = adminapi.ActionResolve
	actionRedeliver   = adminapi.ActionRedeliver
	actionRetry       = adminapi.ActionRetry
	actionCloseOrphan = adminapi.ActionCloseOrphan
	actionCloseHead   = adminapi.ActionCloseHead
	actionRelease     = adminapi.ActionRelease
	actionCancel      = adminapi.ActionCancel
)

// allowedActions asks the state machine which operator actions m's state
// allows, so the console never offers what would be refused.
func allowedActions(m state.Message, now time.Time) []string {
	out := []string{}
	for _, a := range []struct {
		name string
		kind state.Kind
	}{{actionResolve, state.KindResolveCommit}, {actionRedeliver, state.KindRedeliver}, {actionRetry, state.KindRetryNow},
		{actionCloseOrphan, state.KindCloseOrphan}, {actionCloseHead, state.KindCloseHead},
		{actionRelease, state.KindReleaseOrder}, {actionCancel, state.KindOperatorCancel}} {
		if _, _, err := state.Apply(m, state.Event{Kind: a.kind, At: now}); err == nil {
			out = append(out, a.name)
		}
	}
	return out
}
