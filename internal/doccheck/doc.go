// Package doccheck holds no code: its tests keep the documentation true to
// the repository. Every relative link in a Markdown file goes to a file
// that exists and, with a #fragment, to a heading (or an explicit anchor)
// of that file; every reference to a Markdown page in the code, its
// comments and help texts (docs/ordering.md#the-wire-rule, or
// docs/ordering.md "The wire rule") names a page and a section that
// exist; README.md stays a front door of at most 300 lines and
// docs/performance.md at most 250; and every file under docs/bench/ is
// cited by a page outside it (a link to the file or to a directory that
// holds it), so that only the raw reports of current figures stay.
package doccheck
