// Package zktest starts a real ZooKeeper server for tests, from Debian's
// zookeeper package (the jars under /usr/share/java and
// /usr/share/zookeeper, run with the java on PATH), on a free port with its
// own data directory, and registers Dubbo providers in it as Dubbo does
// (an ephemeral node per provider under /dubbo/<interface>/providers,
// named by its URL-encoded provider URL, held by the provider's own
// session). Proxy sits between a client and the server so that a test can
// cut the client off long enough for its session to expire.
//
// Without ZooKeeper installed the tests skip, saying how to install it;
// with CI=true they fail instead.
package zktest
