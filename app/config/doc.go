// Package config is the center's configuration: the YAML file's schema with
// its defaults, environment overrides and validation. Precedence, lowest
// first: built-in defaults, the YAML file, EVENTCENTER_* environment
// variables, command-line flags (applied by cmd/eventcenter).
//
// Unknown YAML keys are errors, so a typo never silently falls back to a
// default. Every error names the setting as the operator wrote it: the
// YAML path and line (checkback.allow[0], forward.targets[1].name) or the
// environment variable (EVENTCENTER_CHECKBACK_FIRST_DELAY), never a Go type
// or field. Validate also makes the checks the components (verifier,
// ingest, forward targets, admin) would make later, so a bad setting is
// reported before the store is opened or migrated and before Kafka is
// dialled.
package config
