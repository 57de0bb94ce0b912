// Package adminapi holds the JSON shapes of the eventcenter admin HTTP API
// (/api/v1/...) and the helpers that build its paths. It is shared by the
// server (package admin) and the Go client (package admin/client) and imports
// nothing of the server, so scripts and tools can use it cheaply.
//
// Message keys may contain ':' and '/'. In paths, bizID and key are each one
// path segment escaped with url.PathEscape ('/' becomes %2F); MessagePath and
// ActionPath do that. The server also accepts a key with raw slashes in GET
// /api/v1/messages/{bizID}/{key...}, and in action paths (the action is always
// the last segment), but keys with segments like "." or ".." or "//" must be
// escaped, since HTTP routers clean such paths. A key that is exactly "." or
// ".." cannot be a path segment even escaped; it goes in a "key" query
// parameter: GET /api/v1/messages/{bizID}?key=.. and POST
// /api/v1/messages/{bizID}/{action}?key=.. (any key may be sent that way).
package adminapi
