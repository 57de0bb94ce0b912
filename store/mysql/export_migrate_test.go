package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/eventcenter/eventcenter/store/migrate"
)

// For the migration tests.
var (
	Migrations = migrations
	Classify   = classifyDDL
)

// MigrateSteps applies ms with a lock wait of lockWait seconds, tries tries
// and the first backoff given.
func MigrateSteps(ctx context.Context, db *sql.DB, ms []migrate.Migration, lockWait, tries int, backoff time.Duration) error {
	return migrateSteps(ctx, db, ms, migrateOptions{lockWaitSeconds: lockWait, tries: tries, backoff: backoff})
}
