package e2e

import "testing"

// TestFlowMySQL is TestFlowPostgres on the MySQL store: 10,000 messages
// committed and rolled back through the whole center.
func TestFlowMySQL(t *testing.T) {
	t.Parallel()
	testFlow(t, "mysql")
}
