package mysql

import (
	"embed"

	"github.com/eventcenter/eventcenter/store/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations, in order.
func migrations() ([]migrate.Migration, error) { return migrate.Load(migrationFS, "migrations") }
