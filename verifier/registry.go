package verifier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// Resolver finds the providers of a registry endpoint (zookeeper://):
// resolver.ZooKeeper. With no provider to call, its error names the
// service and the registry.
type Resolver interface {
	Providers(ctx context.Context, ep checkback.Endpoint) ([]resolver.Provider, error)
}

// Outcomes of eventcenter_checkback_registry_total beside those of
// eventcenter_checkback_total.
const (
	outcomeNoProvider = "no_provider"
)

// registryAllowed tells whether every server of a registry endpoint is
// allowed by a zookeeper:// entry of rules (a prefix entry,
// zookeeper://zk:2181/com.shop.Verify, allows that interface only).
func registryAllowed(rules []allowRule, ep checkback.Endpoint) bool {
	for _, server := range ep.Registry {
		e := ep
		e.Host = server
		ok := false
		for _, rule := range rules {
			if rule.allows(e) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return len(ep.Registry) > 0
}

// attemptBudget is the longest one check-back attempt of ep may take: a
// call, or for a registry endpoint, the lookup and calls of providers in
// turn while the ones before refuse or time out.
func attemptBudget(ep checkback.Endpoint, timeout time.Duration) time.Duration {
	if ep.Protocol == checkback.ProtoRegistry {
		return 2 * timeout
	}
	return timeout
}

// gateKey is the key of ep's concurrency cap and breaker: its host:port,
// or for a registry endpoint the registry and the service.
func gateKey(ep checkback.Endpoint) string {
	if ep.Protocol == checkback.ProtoRegistry {
		return ep.Host + "/" + ep.Interface
	}
	return ep.Host
}

// providerDown tells whether a provider's call failed without an answer
// (refused, reset, no answer in time): the next provider is tried.
func providerDown(err error) bool {
	var se *statusError
	return err != nil && !errors.As(err, &se) && endpointFault(err)
}

// viaRegistry runs one check-back attempt of a registry endpoint: the
// providers the registry lists and the bizID's allow list admits, in a
// weighted random order, each in turn while the ones before refuse or
// time out, within attemptBudget. park is set when no provider found may
// be called (the message is parked, not retried).
func (v *Verifier) viaRegistry(ctx context.Context, j *job, n int) (a answer, park string) {
	m, ep, r := &j.m, j.ep, j.r
	if v.cfg.Resolver == nil {
		return answer{}, fmt.Sprintf("check-back endpoint %s names a registry and the verifier has no registry resolver", ep)
	}
	ctx, cancel := context.WithTimeout(ctx, attemptBudget(ep, r.policy.Timeout))
	defer cancel()
	provs, err := v.cfg.Resolver.Providers(ctx, ep)
	if err != nil {
		return answer{Err: err}, ""
	}
	allowed := make([]resolver.Provider, 0, len(provs))
	var refused []string
	for _, p := range provs {
		if allowedBy(r.allow, p.Endpoint) {
			allowed = append(allowed, p)
		} else {
			refused = append(refused, p.Endpoint.Origin())
		}
	}
	if len(allowed) == 0 {
		if len(refused) > 5 {
			refused = append(refused[:5], "...")
		}
		return answer{}, fmt.Sprintf("the providers of %s in registry zookeeper://%s (%s) are not allowed for bizID %q: add their origins (or their network, tri://[10.0.0.0/8]) to that bizID's allow list, then retry the message",
			ep.Interface, ep.Host, strings.Join(refused, ", "), m.BizID)
	}
	deadline, _ := ctx.Deadline()
	var failed []error
	order := resolver.Order(allowed, v.cfg.Rand)
	for i, p := range order {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		a = v.caller.do(ctx, call{ep: p.Endpoint, bizID: m.BizID, key: m.Key, attempt: n,
			timeout: min(r.policy.Timeout, left), secret: r.currentSecret(), signV1: r.signV1})
		if a.Err == nil {
			return a, ""
		}
		a.Err = fmt.Errorf("provider %s: %w", p.Endpoint, a.Err)
		if !providerDown(a.Err) || i == len(order)-1 || ctx.Err() != nil {
			if len(failed) > 0 {
				a.Err = fmt.Errorf("%w (before it: %w)", a.Err, errors.Join(failed...))
			}
			return a, ""
		}
		v.m.providerSkipped.WithLabelValues(v.registryLabel(ep)).Inc()
		v.log.Debug("check-back provider did not answer; trying the next", "biz_id", m.BizID, "key", m.Key,
			"registry", ep.Host, "service", ep.Interface, "provider", p.Endpoint.Origin(), "err", a.Err)
		failed = append(failed, a.Err)
	}
	return answer{Err: fmt.Errorf("no provider answered within %s: %w", attemptBudget(ep, r.policy.Timeout), errors.Join(failed...))}, ""
}

// allowedBy tells whether a rule of rules allows ep.
func allowedBy(rules []allowRule, ep checkback.Endpoint) bool {
	for _, rule := range rules {
		if rule.allows(ep) {
			return true
		}
	}
	return false
}

// registryLabel is the registry label of the metrics: the registry's first
// server when a configured allow entry names it, "other" otherwise (a
// configured endpoint or an entry of another form).
func (v *Verifier) registryLabel(ep checkback.Endpoint) string {
	if _, ok := v.registries[ep.Host]; ok {
		return ep.Host
	}
	return "other"
}

// RegistryOutcomes returns this verifier's check-backs through the
// registry named registry (its first server, as the metrics label it) by
// outcome, leaving out outcomes never seen.
func (v *Verifier) RegistryOutcomes(registry string) map[string]int64 {
	out := map[string]int64{}
	label := "other"
	if _, ok := v.registries[registry]; ok {
		label = registry
	}
	for _, o := range []string{outcomeCommit, outcomeRollback, outcomeUnknown, outcomeError, outcomeNoProvider, outcomeParked} {
		var m dto.Metric
		if err := v.m.registryTotal.WithLabelValues(label, o).Write(&m); err == nil && m.GetCounter().GetValue() > 0 {
			out[o] = int64(m.GetCounter().GetValue())
		}
	}
	return out
}
