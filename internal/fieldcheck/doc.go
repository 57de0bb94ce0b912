// Package fieldcheck carries the problems a component's Config.Validate
// finds, each naming the Go field it is about, so that the binary's
// configuration (app/config) can report them under the setting's own name
// (a YAML path or an environment variable) without checking the field a
// second time: the component stays the one home of its limits.
//
// A component collects with a Checker; app/config reads the problems back
// with Problems and renames the fields.
package fieldcheck
