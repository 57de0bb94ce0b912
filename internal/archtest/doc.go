// Package archtest holds no code: its test checks the import rule of
// docs/architecture.md on the real import graph (go list). Every package of
// the module has a layer; a package imports only packages of lower layers,
// so arrows point down and nothing reaches sideways into a sibling.
package archtest
