package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
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

// The console's registries page shows each registry's connection, its
// services with their providers (services without one first, marked) and
// their last error; the navigation links to it; no registry says so.
func TestUIRegistries(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	regs := []adminapi.CheckbackRegistry{
		{Registry: "zk1:2181", Servers: []string{"zk1:2181", "zk2:2181"}, Connected: true, Since: since,
			Services: []adminapi.RegistryService{
				{Interface: "com.shop.A", Providers: 3, Known: true, Updated: since},
				{Interface: "com.shop.Gone", Providers: 0, Known: true, Updated: since},
			}, Outcomes: map[string]int64{"commit": 7, "no_provider": 2}},
		{Registry: "zk9:2181", Servers: []string{"zk9:2181"}, Connected: false, Since: since, SessionExpiries: 1,
			Services: []adminapi.RegistryService{{Interface: "com.shop.Never", LastError: "read /dubbo/com.shop.Never/providers: zk: could not connect to a server"}}},
	}
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Registries = func() []adminapi.CheckbackRegistry { return regs }
	})
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	require.Contains(t, b.get("/ui/").body, `<a href="/ui/registries">Registries</a>`, "linked from the navigation")
	p := b.get("/ui/registries")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "2 registries, <span class=\"hot\">1 not connected</span>, <span class=\"hot\">2 services without a provider</span>")
	require.Regexp(t, `(?s)data-registry="zk1:2181".*zk1:2181, zk2:2181.*<dd class="conn">connected since 2026-12-01 12:00:00Z.*commit 7, no_provider 2`, p.body)
	// Services without a provider first.
	require.Regexp(t, `(?s)data-service="com.shop.Gone">.*?<span class="hot">none</span>.*data-service="com.shop.A">\s*<td class="mono">com.shop.A</td>\s*<td class="providers">3</td>`, p.body)
	require.Regexp(t, `(?s)data-registry="zk9:2181".*<span class="hot">NOT connected</span>.*<dt>session expiries</dt><dd>1</dd>.*<span class="muted">none yet</span>`, p.body)
	require.Regexp(t, `(?s)data-service="com.shop.Never">.*?<span class="hot">none</span>.*?<span class="hot">never</span>.*?zk: could not connect to a server`, p.body)
	require.Equal(t, http.StatusBadRequest, b.get("/ui/registries?x=1").code)

	bare := admintest.New(t, nil)
	b = newBrowser(t, bare)
	b.login(admintest.ReadToken)
	p = b.get("/ui/registries")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "no check-back registry in use")
}
