// Package config is the center's configuration: the YAML file's schema with
// its defaults, environment overrides and validation. Precedence, lowest
// first: built-in defaults, the YAML file, EVENTCENTER_* environment
// variables, command-line flags (applied by cmd/eventcenter).
//
// Unknown YAML keys are errors, so a typo never silently falls back to a
// default. Every error names the setting as the operator wrote it: the
// YAML path and line (checkback.allow[0], forward.targets[1].name) or the
// environment variable (EVENTCENTER_CHECKBACK_FIRST_DELAY), never a Go type
// or field. Validate runs before the store is opened or migrated and
// before Kafka is dialled.
//
// One home per limit: a component's Config owns its defaults and limits,
// and its Validate names the Go field (internal/fieldcheck). This package
// maps the settings to those fields (IngestConfig, with ingestPaths naming
// the setting behind each field), passes the component's problems on under
// the settings' names (fieldPaths.report), and checks itself only what the
// components cannot: what spans sections (addresses, secrets, lanes, a
// target's message size against ingest's payload limit) and what only the
// binary has (HTTP, store, log). internal/archtest fails when a limit is
// declared or checked twice.
//
// One file per section of the file: kafka.go, store.go, http.go,
// admin.go, ingest.go, forward.go (and forward_biz.go), checkback.go (and
// checkback_biz.go), retention.go, log.go, ingress.go, lanes.go and
// security.go (secrets of every section); config.go holds the whole
// file's Config, Default, Load, Parse, ApplyEnv and Validate.
package config
