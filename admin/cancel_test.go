package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// An operator cancels a SCHEDULED message: audited, reason required; it
// shows its deliver-at before and CANCELLED after, and a sent message is
// refused.
func TestOperatorCancel(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		now := env.Clock.Now()
		deliverAt := now.Add(time.Hour)
		_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
			storetest.Scheduled(admintest.Biz, "later", 1, now, deliverAt, ""),
			storetest.Commit(admintest.Biz, "later", 1, now),
		}})
		require.NoError(t, err)
		d := decode[adminapi.MessageDetail](t, get(t, env, adminapi.MessagePath(admintest.Biz, "later")), http.StatusOK)
		require.NotNil(t, d.DeliverAt)
		require.True(t, deliverAt.Equal(*d.DeliverAt))
		require.Contains(t, d.Actions, adminapi.ActionCancel)
		pg := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?status=scheduled"), http.StatusOK)
		require.Len(t, pg.Messages, 1)
		require.Equal(t, "later", pg.Messages[0].Key)
		cs := decode[adminapi.Counts](t, get(t, env, "/api/v1/counts"), http.StatusOK)
		require.EqualValues(t, 1, cs.ByStatus["COMMITTED/SCHEDULED"])
		require.EqualValues(t, 1, cs.ByBizID[admintest.Biz]["COMMITTED/SCHEDULED"])

		path := adminapi.ActionPath(admintest.Biz, "later", adminapi.ActionCancel)
		a := post(t, env, path, reason(""))
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), "reason: required")
		res := decode[adminapi.ActionResult](t, post(t, env, path, reason("campaign called off")), http.StatusOK)
		require.Equal(t, "operator_cancel", res.Action)
		require.Equal(t, "CANCELLED", res.Message.Status)
		require.Equal(t, "operator_cancel", res.Message.Audit[0].Action)
		require.Equal(t, "campaign called off", res.Message.Audit[0].Reason)
		require.NotContains(t, res.Message.Actions, adminapi.ActionCancel)
		cs = decode[adminapi.Counts](t, get(t, env, "/api/v1/counts"), http.StatusOK)
		require.Zero(t, cs.ByStatus["COMMITTED/SCHEDULED"])
		require.EqualValues(t, 1, cs.ByStatus["CANCELLED"])

		a = post(t, env, path, reason("again"))
		require.Equal(t, http.StatusConflict, a.code, "cancelled already")
		a = post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeySent, adminapi.ActionCancel), reason("r"))
		require.Equal(t, http.StatusConflict, a.code, "a SENT message is not cancelled")
	})
}
