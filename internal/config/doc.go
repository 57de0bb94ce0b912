// Package config is the center's configuration: the YAML file's schema with
// its defaults, environment overrides and validation. Precedence, lowest
// first: built-in defaults, the YAML file, EVENTCENTER_* environment
// variables, command-line flags (applied by cmd/eventcenter).
//
// Unknown YAML keys are errors, so a typo never silently falls back to a
// default. Validation errors name the field by its YAML path.
package config
