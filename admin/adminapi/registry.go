package adminapi

import "time"

// CheckbackRegistries is GET /api/v1/registries: the check-back
// registries this center uses (zookeeper:// endpoints), each with its
// connection and the services it watches there.
type CheckbackRegistries struct {
	Registries []CheckbackRegistry `json:"registries"`
}

// CheckbackRegistry is one registry (ZooKeeper ensemble) as this center
// sees it.
type CheckbackRegistry struct {
	// Registry is its first server (host:port), the metrics' label;
	// Servers all of them.
	Registry string   `json:"registry"`
	Servers  []string `json:"servers"`
	// Connected tells whether a session is open; Since is when that last
	// changed. While not connected, the last provider lists are used.
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since"`
	// SessionExpiries counts the sessions the server expired.
	SessionExpiries int64             `json:"session_expiries"`
	Services        []RegistryService `json:"services"`
	// Outcomes counts this center's check-backs through the registry by
	// outcome (commit, rollback, unknown, error, no_provider, parked).
	Outcomes map[string]int64 `json:"outcomes,omitempty"`
}

// RegistryService is one service whose providers a registry lists.
type RegistryService struct {
	Interface string `json:"interface"`
	// Providers is the number of entries in the last list read (every
	// protocol, version and group).
	Providers int `json:"providers"`
	// Known tells whether a list was ever read; Updated is when the last
	// one was; LastError the last read's error while none was read since.
	Known     bool      `json:"known"`
	Updated   time.Time `json:"updated,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}
