// Package logbuf is a text buffer that several goroutines may write to at
// once, for tests that read what a component logged (slog handlers, a
// child process's output) while it runs.
package logbuf
