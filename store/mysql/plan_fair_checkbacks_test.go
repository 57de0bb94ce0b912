package mysql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql"
)

// The fair check-back claim finds the bizIDs with a loose index scan (of
// an index leading with prepared_biz) and reads each bizID's due rows from it in order: no
// table scan, no sort.
func TestFairCheckbackClaimUsesItsIndex(t *testing.T) {
	t.Parallel()
	db := planDB(t, 20000)
	plan := explain(t, db, mysql.FairCheckbackBizSQL)
	require.Contains(t, plan, "Using index for group-by", plan)
	require.NotContains(t, plan, ":ALL:", plan)
	require.NotContains(t, plan, "filesort", plan)
	plan = explain(t, db, fmt.Sprintf(mysql.FairCheckbackClaimSQL, "*", "?, ?, ?"), "b1", time.Now().UTC(), 0, 1, 2, 100)
	require.Regexp(t, `:(range|ref):eventcenter_messages_verify_due_biz:`, plan)
	require.NotContains(t, plan, "filesort", plan)
}
