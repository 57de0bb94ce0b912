// Package memstore is an in-memory implementation of the store methods the
// forwarder uses (Apply, ClaimSends, MarkSent, Get), built on store.Fold, with
// call counters and injectable failures. It is for tests only.
package memstore
