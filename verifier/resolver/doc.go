// Package resolver finds the providers of a Dubbo service in its registry,
// for check-backs addressed to a registry (zookeeper://host:port/<interface>,
// envelope/checkback's ProtoRegistry) rather than to a provider.
//
// ZooKeeper reads the registry as Dubbo lays it out: one child of
// /dubbo/<interface>/providers per provider, each a URL-encoded provider URL
// (tri://10.0.0.1:50051/<interface>?version=..&group=..&weight=..). Lists are
// kept per (registry, interface) and held current by child watches, not read
// per call: the first check-back of a service reads its list and sets the
// watch, later ones are answered from memory. A registry that cannot be
// reached, or whose session expired, keeps the last list it gave; the
// client (github.com/go-zookeeper/zk) reconnects, pausing a second after
// each round of its servers, and a list read that fails is retried with a
// doubling backoff. Providers matches interface, version and group, keeps
// those whose protocol the center speaks (Triple with JSON, JSON-RPC) and
// says, when none is left, what the registry held and what the provider
// must enable.
//
// The verifier declares the one method it needs (Providers); Status and
// the metrics show each registry's connection, its services and their
// providers.
package resolver
