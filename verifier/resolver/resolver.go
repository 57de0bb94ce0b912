package resolver

import (
	"errors"
	"fmt"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Provider is one provider a registry-addressed check-back may call.
type Provider struct {
	// Endpoint is the provider's direct endpoint (tri:// or jsonrpc://),
	// with the method, version, group and bizid of the registry endpoint.
	Endpoint checkback.Endpoint
	// Weight is the provider's Dubbo weight (DefaultWeight when unset);
	// calls are spread over providers in proportion to it.
	Weight int
}

// ErrNoProvider is wrapped by every NoProviderError.
var ErrNoProvider = errors.New("no provider")

// NoProviderError says why a registry gave no provider to call: the
// service is not registered, none of its providers matches version and
// group or speaks a protocol the center speaks, or the registry cannot be
// reached and no list of the service was ever read.
type NoProviderError struct {
	// Service is the interface; Registry the registry's first server.
	Service, Registry string
	// Reason says what the registry held and what to do.
	Reason string
}

func (e *NoProviderError) Error() string { return e.Reason }

// Unwrap returns ErrNoProvider.
func (e *NoProviderError) Unwrap() error { return ErrNoProvider }

// providersPath is where Dubbo registers the providers of an interface.
func providersPath(iface string) string { return "/dubbo/" + iface + "/providers" }

// registryKey names a registry (an ensemble) by its first server: the
// endpoints naming it share one session, with the servers of the first
// endpoint that named it.
func registryKey(ep checkback.Endpoint) string { return ep.Registry[0] }

// errNotRegistry is returned for an endpoint that names no registry.
func errNotRegistry(ep checkback.Endpoint) error {
	return fmt.Errorf("resolve %s: not a registry endpoint", ep)
}
