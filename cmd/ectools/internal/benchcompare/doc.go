// Package benchcompare compares two builds of the center on the standard
// bench runs: burst, steady rate, check-back, ordered and noisy neighbour.
//
// Each build is an ectools binary (or a git revision built into one), so
// each side runs its own bench, center and load generator, as a release
// is measured. The runs alternate between the builds (old then new, then
// new then old, ...) so that a machine that grows busier mid-way weighs
// on both alike; the report gives each metric's median per build, every
// value behind it, and the ratio new ÷ old with the direction that is
// better. A run a build does not know (an older bench without its flags)
// is reported as not supported rather than failing the comparison.
//
// ectools bench compare is its command; docs/development.md says when to
// run it (every change to the hot path, against the last release tag).
package benchcompare
