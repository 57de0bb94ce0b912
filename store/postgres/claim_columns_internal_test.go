package postgres

import (
	"strings"
	"testing"
)

// The check-back claim returns the row's columns in the order ScanMessage
// reads them, with only the payload left out.
func TestCheckbackClaimReturnsEveryColumnButThePayload(t *testing.T) {
	want := strings.Split(columns, ", ")
	got := strings.Split(ckColumns, ", ")
	if len(got) != len(want) {
		t.Fatalf("check-back claim returns %d columns, the row has %d:\n%s", len(got), len(want), ckColumns)
	}
	for i := range want {
		switch {
		case want[i] == "payload" && got[i] != "NULL::bytea AS payload":
			t.Errorf("column %d: got %q, want the payload left out as NULL", i, got[i])
		case want[i] != "payload" && got[i] != want[i]:
			t.Errorf("column %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
