// Package admintest sets up an admin handler over a real SQLite store with a
// known set of messages, for the tests of admin, admin/client and admin/cli.
package admintest
