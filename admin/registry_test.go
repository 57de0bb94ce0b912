package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
)

// GET /api/v1/registries lists the center's check-back registries with
// their connection, services and outcomes; an empty list without a view.
func TestRegistriesAPI(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		want := []adminapi.CheckbackRegistry{{Registry: "zk1:2181", Servers: []string{"zk1:2181", "zk2:2181"}, Connected: false, Since: since,
			SessionExpiries: 2, Services: []adminapi.RegistryService{{Interface: "com.shop.TxChecker", Providers: 3, Known: true, Updated: since}},
			Outcomes: map[string]int64{"commit": 7, "no_provider": 1}}}
		env := newEnv(t, nil, func(c *admin.Config) {
			c.Registries = func() []adminapi.CheckbackRegistry { return want }
		})
		got := decode[adminapi.CheckbackRegistries](t, get(t, env, "/api/v1/registries"), http.StatusOK)
		require.Equal(t, want, got.Registries)
		require.Contains(t, get(t, env, "/api/v1/registries?x=1").err(t), "unknown query parameter")

		bare := newEnv(t, nil)
		got = decode[adminapi.CheckbackRegistries](t, get(t, bare, "/api/v1/registries"), http.StatusOK)
		require.NotNil(t, got.Registries)
		require.Empty(t, got.Registries)
	})
}
