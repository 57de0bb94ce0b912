// Package archtest holds no code: its test checks the import rule of
// docs/architecture.md on the real import graph (go list, in the root,
// clientlib and envelope modules). The layers are read from the document's
// table ("The import rule"), so the two cannot disagree: every package has
// a layer, every import of a project package goes to one with a layer, and
// a package imports only packages of lower layers, so arrows point down
// and nothing reaches sideways into a sibling.
//
// It also draws the rooms (top-level folders) on floors from the same
// graph and fails on a folder-level arrow running back up, and fails when
// a package under internal/ (the leaf utilities) imports, in its tests
// too, a component or the wiring.
//
// And it reads the source for configuration limits declared twice
// (limits_test.go): a limit constant copied into another package, a size
// spelt again with literals in app/, or a setting app/config compares
// while the component's own validation bounds it.
package archtest
