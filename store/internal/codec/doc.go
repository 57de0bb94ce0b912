// Package codec holds the small encodings the SQL drivers share: forwarded
// headers as one binary-safe blob, list cursors, and lease tokens.
package codec
