// Package version holds the build's version, stamped at link time:
//
//	go build -ldflags "-X github.com/eventcenter/eventcenter/internal/version.Version=v1.2.3 -X github.com/eventcenter/eventcenter/internal/version.Commit=abc123" ./cmd/eventcenter
package version

import "runtime"

var (
	// Version is the release version ("dev" when not stamped).
	Version = "dev"
	// Commit is the source commit ("unknown" when not stamped).
	Commit = "unknown"
)

// GoVersion is the Go toolchain that built the binary.
func GoVersion() string { return runtime.Version() }
