package center

import (
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// registries is the admin view of the check-back registries
// (GET /api/v1/registries).
func (c *Center) registries() []adminapi.CheckbackRegistry {
	sts := c.resolver.Status()
	out := make([]adminapi.CheckbackRegistry, 0, len(sts))
	for _, st := range sts {
		r := adminapi.CheckbackRegistry{Registry: st.Registry, Servers: st.Servers, Connected: st.Connected, Since: st.Since,
			SessionExpiries: st.SessionExpiries, Services: []adminapi.RegistryService{}, Outcomes: c.Verifier.RegistryOutcomes(st.Registry)}
		for _, s := range st.Services {
			r.Services = append(r.Services, adminapi.RegistryService{Interface: s.Interface, Providers: s.Providers, Known: s.Known,
				Updated: s.Updated, LastError: s.LastError})
		}
		out = append(out, r)
	}
	return out
}

// registryLines are the /readyz lines of the check-back registries in use:
// detail only, never a reason to be unready (a registry down leaves the
// other check-backs and everything else working, and the last provider
// lists are used meanwhile).
func registryLines(regs []resolver.Status) []string {
	lines := make([]string, 0, len(regs))
	for _, r := range regs {
		providers, empty := 0, 0
		for _, s := range r.Services {
			providers += s.Providers
			if s.Providers == 0 {
				empty++
			}
		}
		state := "connected"
		if !r.Connected {
			state = fmt.Sprintf("NOT connected for %s (using the last provider lists; reconnecting)", time.Since(r.Since).Round(time.Second))
		}
		line := fmt.Sprintf("check-back registry zookeeper://%s: %s; %d services watched, %d providers", r.Registry, state, len(r.Services), providers)
		if empty > 0 {
			line += fmt.Sprintf(", %d services without a provider", empty)
		}
		if r.SessionExpiries > 0 {
			line += fmt.Sprintf("; %d session expiries", r.SessionExpiries)
		}
		lines = append(lines, line)
	}
	return lines
}
