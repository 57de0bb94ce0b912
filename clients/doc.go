// Package clients holds the producer API's clients in other languages
// (python/: standard library only; node/: no dependencies) and, in its
// test, their end-to-end check against a real center on the embedded
// broker: both drive prepare, commit, rollback and a signed check-back,
// and the forwarded records are read back (by KafkaJS, pinned in
// node/test/package-lock.json, for the Node leg). Both also prepare with a
// zookeeper:// check-back endpoint, which the center keeps as written and
// resolves through a real ZooKeeper. It has no Go API.
package clients
